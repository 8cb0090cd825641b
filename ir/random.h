/* random.h - the counter-based generator of mo.random.uniform and
 * mo.random.normal (ir/interp_random.c documents it; jit/random.c emits the
 * same arithmetic). Pure functions of (seed, index): no state, so a value
 * does not depend on which thread, part or device computes it. */
#ifndef KILN_IR_RANDOM_H
#define KILN_IR_RANDOM_H

#include <stdint.h>

#define IR_RAND_GOLDEN 0x9E3779B97F4A7C15ull /* splitmix64's increment */
#define IR_RAND_M1 0xBF58476D1CE4E5B9ull
#define IR_RAND_M2 0x94D049BB133111EBull
#define IR_RAND_TWO_PI 6.283185307179586

/* splitmix64's output function: a bijection of 64 bits that mixes every
 * input bit into every output bit. */
static inline uint64_t ir_rand_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * IR_RAND_M1;
  z = (z ^ (z >> 27)) * IR_RAND_M2;
  return z ^ (z >> 31);
}

/* The stream's key for a seed. */
static inline uint64_t ir_rand_key(int64_t seed) {
  return ir_rand_mix((uint64_t)seed + IR_RAND_GOLDEN);
}

/* Value i of the stream: splitmix64's (i + 1)-th output from state key. */
static inline uint64_t ir_rand_bits(uint64_t key, uint64_t i) {
  return ir_rand_mix(key + (i + 1) * IR_RAND_GOLDEN);
}

#endif
