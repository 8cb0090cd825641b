/* help.c - usage texts for `kiln`, `kiln help` and `kiln help COMMAND`. */
#include <string.h>

#include "cli.h"

void cli_usage(FILE *out) {
  fprintf(out,
          "usage: kiln COMMAND [ARGS]\n"
          "\n"
          "commands:\n"
          "  check GRAPH.mlir       parse and verify a graph, print its canonical IR\n"
          "                         ('-' reads standard input; MODEL.onnx is imported)\n"
          "  run GRAPH.mlir [OPTS]  compile a graph and run it (CPU, or --device);\n"
          "                         also MODEL.onnx, its weights bound from the model\n"
          "  import MODEL.onnx -o GRAPH.mlir --weights-out W.safetensors\n"
          "                         write an ONNX model as MO text and its weights\n"
          "  compile GRAPH.mlir --target T --emit KIND -o FILE\n"
          "                         write the code kiln generates for a target (host,\n"
          "                         sm_80, sm_90, gfx90a, gfx942, simt-emu)\n"
          "  devices                list the devices kiln can run on here\n"
          "  cache SUBCOMMAND       list, check, prune, warm, explain, export and\n"
          "                         import the on-disk kernel cache\n"
          "  help [COMMAND]         show this help, or a command's\n"
          "  --version              print kiln's and LLVM's versions\n"
          "\n"
          "exit status: 0 success, 1 error (bad input, failed run), 2 usage error\n");
}

void cli_usage_check(FILE *out) {
  fprintf(out,
          "usage: kiln check GRAPH.mlir [--dot FILE]\n"
          "\n"
          "Parse and verify GRAPH.mlir ('-' reads standard input) and print its\n"
          "canonical text. On bad input prints FILE:LINE:COL: message on stderr and\n"
          "exits 1. --dot FILE also writes the graph before and after fusion (as\n"
          "prepared for the host) as Graphviz DOT: fused groups as clusters, each\n"
          "edge labelled with its value's shape (render: dot -Tsvg FILE -o g.svg).\n");
}

void cli_usage_run(FILE *out) {
  fprintf(out,
          "usage: kiln run GRAPH.mlir [OPTIONS]\n"
          "\n"
          "Compile GRAPH.mlir, run it once (or --repeat N times) and print each\n"
          "output's name, dtype, shape and first values. An ONNX model (MODEL.onnx,\n"
          "or a file that is a protobuf) is imported first and its weights are\n"
          "bound from it (--weights still overrides them).\n"
          "\n"
          "  --input NAME=FILE.npy       input NAME from a .npy file (repeatable)\n"
          "  --weights FILE.safetensors|FILE.gguf  bind weights by name (repeatable)\n"
          "  --random-inputs             fill missing inputs and weights with seeded\n"
          "                              random values (floats in [-1, 1), ints in [0, 10))\n"
          "  --dim SYM=VALUE             value of a symbolic dim, for random inputs\n"
          "                              (repeatable; dims of --input files are taken\n"
          "                              from the files)\n"
          "  --seed N                    seed for --random-inputs (default 0)\n"
          "  --out DIR                   write NAME.npy per output into DIR (created)\n"
          "  --repeat N                  run N times; print median, min and max time\n"
          "  --stats                     print compile and execute time, cache and\n"
          "                              specialization counters\n"
          "  --profile                   print a table per kernel: calls, total and mean\n"
          "                              time, share, GFLOP/s or GB/s beside the peaks\n"
          "                              of where it ran (measured at the end of the\n"
          "                              run); with --device, copies in and out too\n"
          "  --trace FILE                write a Chrome trace-event JSON of compiles,\n"
          "                              executes and kernels (Perfetto opens it; also\n"
          "                              KILN_TRACE=FILE); with --device, its launches\n"
          "                              and copies on the device's own track\n"
          "  --specialize POLICY         shape-specialized variants (default async, or\n"
          "                              KILN_SPECIALIZE): off never; sync compiles one\n"
          "                              per new binding before the call returns; async\n"
          "                              runs the generic variant at once and compiles\n"
          "                              in the background (later runs of --repeat use\n"
          "                              it once live; --stats says what was pending at\n"
          "                              exit); ahead only for this run's binding\n"
          "  --bucket SYM=pow2|N|exact   group the values of SYM into buckets (powers of\n"
          "                              two, multiples of N) that share one variant; a\n"
          "                              bucketed dim stays a run-time dim, so results\n"
          "                              are exact (repeatable)\n"
          "  --threads N                 threads the kernels split across (default: one\n"
          "                              per core, or KILN_NUM_THREADS; 0: the default)\n"
          "  --kernels FILE              a kernel library for mo.custom ops: C source\n"
          "                              (.c, compiled with clang 19: KILN_CLANG, else\n"
          "                              clang-19 / clang on PATH), LLVM IR (.ll) or\n"
          "                              bitcode (.bc); see kiln/kernel.h (repeatable)\n"
          "  --device DEV                cpu (default), simt-emu, cuda:N or hip:N: compile\n"
          "                              the graph's SIMT kernels for DEV and run there\n"
          "                              (--specialize and --bucket apply there too);\n"
          "                              custom ops there need KILN_SIMT_KERNEL kernels\n"
          "  --generate N --prompt T,T,...  drive the graph as a decoder: one execute for\n"
          "                              the prompt, then one per new token, N tokens\n"
          "                              chosen greedily; prints them and the step times\n"
          "                              (median, p99, max, a curve per 64 steps). The\n"
          "                              graph's interface: input 0 the tokens, si32 /\n"
          "                              si64 [n] (n symbolic); buffer inputs allocated\n"
          "                              zero-filled by kiln and kept across the steps\n"
          "                              (static shapes: a KV cache); si32 / si64 [n]\n"
          "                              inputs the tokens' positions (tokens run before\n"
          "                              + 0 .. n-1); si32 / si64 [1] or [] inputs the\n"
          "                              tokens run after the call; output 0 the logits\n"
          "                              [..., vocab]: the next token is the argmax of\n"
          "                              its last row. examples/decoder/decoder.py\n"
          "                              --emit-mlir writes such a graph. With --device\n"
          "                              the steps run there (buffers copied in and back)\n"
          "\n"
          "Environment: KILN_FUSE=0 turns fusion off (one kernel per op).\n"
          "Input names are the graph's argument_names, else its SSA names (without %%).\n");
}

void cli_usage_cache(FILE *out) {
  fprintf(out,
          "usage: kiln cache SUBCOMMAND [--dir DIR] [ARGS]\n"
          "\n"
          "The on-disk kernel cache: one file per compiled kernel, named by the\n"
          "XXH3-128 key of its canonical kernel IR, target (triple, CPU, features),\n"
          "compile options and kiln / LLVM versions.\n"
          "\n"
          "  ls                     one line per entry, least recently used first:\n"
          "                         key, size, last use, the kernel's op and types\n"
          "  stats                  the effective settings and where each comes from\n"
          "                         (directory, seeds, bound), entries, bytes, whether\n"
          "                         the runtime uses the cache, and any problem\n"
          "  clear                  remove every entry\n"
          "  prune [--max-bytes N]  remove least recently used entries until the\n"
          "                         cache holds at most N bytes (K, M, G, T suffixes:\n"
          "                         powers of 1024; default: the configured bound)\n"
          "  verify                 read every entry in full, remove the bad ones\n"
          "  verify --recompile [--sample N]\n"
          "                         compile each entry's kernel again (N random ones)\n"
          "                         and compare the objects byte for byte: an entry\n"
          "                         whose code differs is forged or damaged (removed;\n"
          "                         exit status 1)\n"
          "  explain GRAPH.mlir [--dim SYM=V]...\n"
          "                         per kernel of the graph (and, with a --dim for\n"
          "                         every symbol, of its specialized variant): its key\n"
          "                         and hit or miss;\n"
          "                         a miss names the key components that differ from\n"
          "                         the nearest entry (same kernel built for another\n"
          "                         CPU or kiln version, or no entry for the kernel)\n"
          "  warm GRAPH.mlir... [--dim SYM=V1,V2,...]... [--target host]\n"
          "                         compile the graphs' kernels into the cache (one\n"
          "                         progress bar over all of them on a terminal); with\n"
          "                         a --dim list for every symbol of a graph also its\n"
          "                         shape-specialized kernels of each combination\n"
          "                         (exact buckets; with several graphs a --dim serves\n"
          "                         those that have the symbol); prints how many were\n"
          "                         compiled and how many were already there.\n"
          "                         --target: the host only (\"host\", its triple or\n"
          "                         CPU name); other targets need the GPU path\n"
          "  export FILE [--sign SECRET_KEY]\n"
          "                         write every entry into one bundle file, signed\n"
          "                         (Ed25519) with the key\n"
          "  import FILE [--trust-key PUBLIC_KEY]... [--trust-unsigned]\n"
          "                         check a bundle in full, then add its entries; an\n"
          "                         unsigned bundle, or one not signed by a --trust-key,\n"
          "                         is refused unless --trust-unsigned; a truncated or\n"
          "                         corrupt bundle, or an entry whose key is not the\n"
          "                         hash of the components it records, is an error\n"
          "                         (naming the offset); either way nothing is imported\n"
          "  push                   copy every local entry the remote cache lacks to it\n"
          "  pull                   copy every remote entry the local cache lacks here\n"
          "  ls --remote, stats --remote\n"
          "                         the remote cache's entries; its server, memory,\n"
          "                         eviction policy and entry count\n"
          "  warm GRAPH.mlir... --remote [--dim ...]\n"
          "                         compile straight into the remote cache (skipping\n"
          "                         kernels it holds); progress with an ETA on a terminal\n"
          "  keygen SECRET_KEY PUBLIC_KEY\n"
          "                         make an Ed25519 key pair for signing bundles (new\n"
          "                         files; the secret one mode 0600)\n"
          "\n"
          "  --kernels FILE         (explain, warm; repeatable) a kernel library for the\n"
          "                         graph's custom ops, as kiln run --kernels takes it\n"
          "  --dir DIR              the cache directory; default: $KILN_CACHE_DIR, else\n"
          "                         $XDG_CACHE_HOME/kiln, else ~/.cache/kiln\n"
          "  --remote[=URL]         (ls, stats, warm, push, pull) the remote cache:\n"
          "                         redis://[user:password@]host[:port][/db], or\n"
          "                         rediss://...[?cacert=F&cert=F&key=F] (TLS), default\n"
          "                         $KILN_CACHE_REMOTE; namespace $KILN_CACHE_REMOTE_NS\n"
          "                         (default kiln); 2 s per command unless\n"
          "                         KILN_CACHE_REMOTE_TIMEOUT_MS says otherwise\n"
          "\n"
          "These commands use the directory even when KILN_CACHE=off (which only\n"
          "stops kiln run and the API from reading and writing it). The bound is\n"
          "KILN_CACHE_MAX_BYTES (default 1G). In memory, a process keeps the code of\n"
          "kernels no model uses up to KILN_CODE_MAX_BYTES (default 8M), unloading\n"
          "the least recently used beyond it.\n"
          "KILN_CACHE_SEED_DIR (colon-separated) names read-only caches searched after\n"
          "the directory (a warmed cache shipped in an image). A directory or entry\n"
          "not owned by you or root, or writable by group or others, is refused.\n"
          "Bundles carry a target's kernels to other machines: entries built for\n"
          "another target (CPU, features) or kiln / LLVM version are imported but\n"
          "simply never hit, since their keys differ; `kiln cache explain` shows it.\n");
}

int cli_help(int argc, char **argv) {
  if (argc < 2) {
    cli_usage(stdout);
    return CLI_OK;
  }
  if (strcmp(argv[1], "run") == 0) {
    cli_usage_run(stdout);
    return CLI_OK;
  }
  if (strcmp(argv[1], "cache") == 0) {
    cli_usage_cache(stdout);
    return CLI_OK;
  }
  if (strcmp(argv[1], "compile") == 0) {
    cli_usage_compile(stdout);
    return CLI_OK;
  }
  if (strcmp(argv[1], "check") == 0) {
    cli_usage_check(stdout);
    return CLI_OK;
  }
  if (strcmp(argv[1], "import") == 0) {
    cli_usage_import(stdout);
    return CLI_OK;
  }
  fprintf(stderr, "kiln help: unknown command '%s'\n\n", argv[1]);
  cli_usage(stderr);
  return CLI_USAGE;
}
