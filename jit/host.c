/* host.c - the host's CPU name and feature list as LLVM reports them,
 * read once per process. Each query runs cpuid many times, and in a virtual
 * machine every cpuid traps to the hypervisor: ~90 us a query on the
 * development VM, asked ~15 times per model compile (every lowering that
 * checks a feature, every template it retargets) before this.
 *
 * Assumes: the host's CPU does not change while the process runs (LLVM's
 * own host detection assumes the same). Guarantees: the strings are the
 * ones LLVMGetHostCPUName / LLVMGetHostCPUFeatures return, immutable and
 * never freed ("" when LLVM gives none); safe from any thread. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "jit.h"

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char *host_cpu, *host_features; /* malloc'd once, kept for the process */

static char *keep(char *llvm_owned) {
  char *s = strdup(llvm_owned ? llvm_owned : "");
  LLVMDisposeMessage(llvm_owned);
  return s;
}

static void read_host(void) {
  host_cpu = keep(LLVMGetHostCPUName());
  host_features = keep(LLVMGetHostCPUFeatures());
}

const char *jit_host_cpu(void) {
  pthread_once(&host_once, read_host);
  return host_cpu ? host_cpu : "";
}

const char *jit_host_features(void) {
  pthread_once(&host_once, read_host);
  return host_features ? host_features : "";
}
