/* The CPU's floating-point ceiling: independent fused multiply-adds on every thread, nothing
 * read from memory. 2 flops per lane per FMA; 16 chains per thread hide the FMA latency (4
 * cycles) at two issues a cycle. Built with AVX-512 where the compiler targets it
 * (-march=native), else AVX2+FMA.
 *
 *   cc -O2 -march=native -pthread fma_peak.c -o fma_peak && ./fma_peak THREADS SECONDS
 * prints: threads, GFLOP/s, vector lanes
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define STORE _mm512_storeu_ps
#else
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define STORE _mm256_storeu_ps
#endif

#define CHAINS 16
#define ITERS 1000000L

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct { double seconds; long rounds; float sink; } job;

static void *work(void *arg) {
    job *j = (job *)arg;
    vec acc[CHAINS];
    vec a = SET1(0.999999f), b = SET1(1e-7f);
    for (int c = 0; c < CHAINS; c++) acc[c] = SET1((float)c);
    double end = now() + j->seconds;
    long rounds = 0;
    while (now() < end) {
        /* named registers, not a loop over an array: the compiler kept that in memory */
        vec r0 = acc[0], r1 = acc[1], r2 = acc[2], r3 = acc[3], r4 = acc[4], r5 = acc[5],
            r6 = acc[6], r7 = acc[7], r8 = acc[8], r9 = acc[9], r10 = acc[10], r11 = acc[11],
            r12 = acc[12], r13 = acc[13], r14 = acc[14], r15 = acc[15];
        for (long i = 0; i < ITERS; i++) {
            r0 = FMA(r0, a, b); r1 = FMA(r1, a, b); r2 = FMA(r2, a, b); r3 = FMA(r3, a, b);
            r4 = FMA(r4, a, b); r5 = FMA(r5, a, b); r6 = FMA(r6, a, b); r7 = FMA(r7, a, b);
            r8 = FMA(r8, a, b); r9 = FMA(r9, a, b); r10 = FMA(r10, a, b); r11 = FMA(r11, a, b);
            r12 = FMA(r12, a, b); r13 = FMA(r13, a, b); r14 = FMA(r14, a, b);
            r15 = FMA(r15, a, b);
        }
        acc[0] = r0; acc[1] = r1; acc[2] = r2; acc[3] = r3; acc[4] = r4; acc[5] = r5;
        acc[6] = r6; acc[7] = r7; acc[8] = r8; acc[9] = r9; acc[10] = r10; acc[11] = r11;
        acc[12] = r12; acc[13] = r13; acc[14] = r14; acc[15] = r15;
        rounds++;
    }
    float out[LANES];
    vec s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = FMA(s, a, acc[c]);
    STORE(out, s);
    j->rounds = rounds;
    j->sink = out[0];          /* keeps the chains alive */
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    double seconds = argc > 2 ? atof(argv[2]) : 0.5;
    pthread_t tid[256];
    job jobs[256];
    if (threads < 1 || threads > 256) return 2;
    double t0 = now();
    for (int t = 0; t < threads; t++) {
        jobs[t].seconds = seconds;
        pthread_create(&tid[t], NULL, work, &jobs[t]);
    }
    double flops = 0;
    float sink = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        flops += (double)jobs[t].rounds * ITERS * CHAINS * LANES * 2.0;
        sink += jobs[t].sink;
    }
    double dt = now() - t0;
    printf("%d %.2f %d%s\n", threads, flops / dt / 1e9, LANES, sink == 12345.f ? " " : "");
    return 0;
}
