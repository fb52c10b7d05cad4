/* Run-time choice of the instruction set for the memory-bound CPU kernels
 * (convert, batchnorm, maxpool, relu, concat, axpy, adam, sgd, mse).
 *
 * The library is compiled for generic x86-64 (SSE2). A kernel's loop is
 * written once, as a static always_inline function in plain C, and
 * STARNN_SIMD_CLONES compiles it three times:
 *   _avx512  AVX-512 F/BW/VL/DQ (+ AVX2, FMA, F16C), 512-bit vectors (zmm)
 *   _avx2    AVX2, FMA, F16C (ymm)
 *   _generic the build's own flags
 * and STARNN_SIMD_CALL calls the clone of the level picked once per process
 * by starnn_simd_level(): the best the CPU (and OS) supports, lowered to
 * the ceiling of starnn_simd_set_ceiling() (codelets/simd.c sets it from
 * the environment variable STARNN_CPU_SIMD=generic|avx2|avx512 when the
 * library loads; never raised above what the CPU has), or set by
 * starnn_simd_set_level() (tests and benchmarks).
 *
 * Every clone computes the same results bit for bit: the clones are
 * compiled without floating-point contraction (no a*b+c -> fma), so an
 * element goes through the same roundings at every width, and reductions
 * keep the order their C code spells out (explicit accumulator lanes; the
 * compiler does not reassociate). tests/codelets/simd.c checks it.
 *
 * On other architectures or compilers without these attributes only the
 * generic version exists. */
#ifndef STARNN_CPU_SIMD_H
#define STARNN_CPU_SIMD_H

enum starnn_simd_level {
	STARNN_SIMD_GENERIC = 0,
	STARNN_SIMD_AVX2 = 1,
	STARNN_SIMD_AVX512 = 2,
};

/* The level in use (first call: detection, lowered to the ceiling). */
int starnn_simd_level(void);
/* The best level this CPU supports, ignoring the ceiling. */
int starnn_simd_max_level(void);
/* Lowers the default level (the one starnn_simd_level() picks, and
 * starnn_simd_set_level(-1) returns to) to at most level, from the next
 * choice on (a level forced by starnn_simd_set_level() is dropped). */
void starnn_simd_set_ceiling(int level);
/* Forces a level for the kernels called from now on (clamped to the CPU's
 * maximum; negative: back to the default choice); returns the level in
 * use. Not synchronised with running kernels: call it while no task runs. */
int starnn_simd_set_level(int level);
/* "generic", "avx2" or "avx512". */
const char *starnn_simd_name(int level);
/* Whether the CPU has F16C (and AVX): fp16 conversions in hardware. */
int starnn_cpu_has_f16c(void);

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && !defined(__clang__)
#define STARNN_SIMD_X86 1
#define STARNN_TARGET_AVX512                                                                                   \
	__attribute__((noinline,                                                                               \
	               target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c,prefer-vector-width=512"),     \
	               optimize("fp-contract=off")))
#define STARNN_TARGET_AVX2 __attribute__((noinline, target("avx2,fma,f16c"), optimize("fp-contract=off")))
#define STARNN_TARGET_GENERIC __attribute__((noinline, optimize("fp-contract=off")))
#elif (defined(__x86_64__) || defined(__i386__)) && defined(__clang__)
#define STARNN_SIMD_X86 1
/* clang has no per-function fp-contract: off for the rest of the file. */
#pragma STDC FP_CONTRACT OFF
#define STARNN_TARGET_AVX512                                                                                   \
	__attribute__((noinline, target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"),                   \
	               min_vector_width(512)))
#define STARNN_TARGET_AVX2 __attribute__((noinline, target("avx2,fma,f16c")))
#define STARNN_TARGET_GENERIC __attribute__((noinline))
#else
#define STARNN_TARGET_GENERIC
#endif

/* The loop body to clone: static, always inlined into each clone. */
#define STARNN_SIMD_INLINE static inline __attribute__((always_inline))

/* Defines NAME_avx512, NAME_avx2 and NAME_generic, void functions of the
 * parameter list PARAMS that call NAME(ARGS); NAME is a STARNN_SIMD_INLINE
 * function. */
#ifdef STARNN_SIMD_X86
#define STARNN_SIMD_CLONES(name, params, args)                                                                 \
	STARNN_TARGET_AVX512 static void name##_avx512 params { name args; }                                    \
	STARNN_TARGET_AVX2 static void name##_avx2 params { name args; }                                        \
	STARNN_TARGET_GENERIC static void name##_generic params { name args; }
#define STARNN_SIMD_CALL(name, args)                                                                           \
	do {                                                                                                   \
		switch (starnn_simd_level()) {                                                                 \
		case STARNN_SIMD_AVX512:                                                                       \
			name##_avx512 args;                                                                    \
			break;                                                                                 \
		case STARNN_SIMD_AVX2:                                                                         \
			name##_avx2 args;                                                                      \
			break;                                                                                 \
		default:                                                                                       \
			name##_generic args;                                                                   \
		}                                                                                              \
	} while (0)
/* The same, NAME taking the clone's level first: NAME(level, ARGS...), the
 * level a constant in each clone (for code that picks its vector width). */
#define STARNN_SIMD_CLONES_LEVEL(name, params, ...)                                                           \
	STARNN_TARGET_AVX512 static void name##_avx512 params { name(STARNN_SIMD_AVX512, __VA_ARGS__); }        \
	STARNN_TARGET_AVX2 static void name##_avx2 params { name(STARNN_SIMD_AVX2, __VA_ARGS__); }              \
	STARNN_TARGET_GENERIC static void name##_generic params { name(STARNN_SIMD_GENERIC, __VA_ARGS__); }
#else
#define STARNN_SIMD_CLONES(name, params, args) static void name##_generic params { name args; }
#define STARNN_SIMD_CLONES_LEVEL(name, params, ...)                                                           \
	static void name##_generic params { name(STARNN_SIMD_GENERIC, __VA_ARGS__); }
#define STARNN_SIMD_CALL(name, args) name##_generic args
#endif

/* Explicit vectors (GCC / clang vector extensions) for reductions, which
 * the compiler does not vectorise by itself without reassociating. Each
 * clone should use the width of its registers (vd8: zmm, vd4: ymm, vd2:
 * xmm): wider ones are split, and then kept in memory by GCC 12. */
typedef float starnn_vf4 __attribute__((vector_size(16)));
typedef float starnn_vf8 __attribute__((vector_size(32)));
typedef int starnn_vi4 __attribute__((vector_size(16)));
typedef int starnn_vi8 __attribute__((vector_size(32)));
typedef double starnn_vd2 __attribute__((vector_size(16)));
typedef double starnn_vd4 __attribute__((vector_size(32)));
typedef double starnn_vd8 __attribute__((vector_size(64)));
/* Widening to double of 4 / 8 floats (a pointer or a float vector): one
 * cvtps2pd. (GCC 12 splits __builtin_convertvector into halves.) */
#define STARNN_VD2_OF(f) ((starnn_vd2){(f)[0], (f)[1]})
#define STARNN_VD4_OF(f) ((starnn_vd4){(f)[0], (f)[1], (f)[2], (f)[3]})
#define STARNN_VD8_OF(f) ((starnn_vd8){(f)[0], (f)[1], (f)[2], (f)[3], (f)[4], (f)[5], (f)[6], (f)[7]})

#endif
