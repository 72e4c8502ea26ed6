/* Reference discrete-time load-balancing simulator in plain C.
 * It is dispatchlab's reference implementation for `dispatchlab bench`: the
 * speed yardstick ("how fast can this model go on one core") and an
 * independent cross-check of the mean of sum Q on the five standard
 * workloads (src/dispatchlab/bench/workloads.py; benchmarks/README.md).
 * `dispatchlab bench` finds it here, builds it with
 *   cc -O3 -march=native -o refsim refsim.c -lm
 * and runs it as `refsim POLICY SLOTS SEED` beside its own runs.
 *
 * Model per slot t:
 *   1. each dispatcher m draws A_m ~ Poisson(lambda_sum / M)
 *   2. dispatcher with A_m > 0 picks ONE server (batch dispatch) by the policy,
 *      using the slot-start state (true queues or its local estimates)
 *   3. each server n draws S_n ~ Bernoulli(mu_n); Q_n = max(Q_n + A_n - S_n, 0)
 *   4. end-of-slot memory updates (pull: each server w.p. p sends Q_n to a
 *      uniformly random dispatcher; push: each dispatcher w.p. p samples d
 *      distinct servers)
 * Output: slots, elapsed seconds, time-average of sum Q, messages.
 *
 * usage: refsim POLICY SLOTS [SEED]
 *   POLICY: wrand | jsq | pod2 | led-jsq-pull | led-pod-push
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 100
#define M 10

static uint64_t s[4];
static inline uint64_t rotl(const uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t next_u64(void) {
  const uint64_t result = s[0] + s[3];
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
  return result;
}
static inline double unif(void) { return (next_u64() >> 11) * 0x1.0p-53; }
static inline int randint(int n) { return (int)(((next_u64() >> 32) * (uint64_t)n) >> 32); }
static void seed_rng(uint64_t x) {
  for (int i = 0; i < 4; i++) { x += 0x9e3779b97f4a7c15ULL; uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL; z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    s[i] = z ^ (z >> 31); }
}
static double exp_neg_lam;
static inline int poisson(void) { /* inversion by multiplication, fine for small means */
  int k = 0; double p = unif();
  while (p > exp_neg_lam) { p *= unif(); k++; }
  return k;
}

static int Q[N];
static int est[M][N];
static double mu[N], wcum[N];

static int argmin_random_ties(const int *v) {
  int best = v[0], cnt = 1, arg = 0;
  for (int n = 1; n < N; n++) {
    if (v[n] < best) { best = v[n]; arg = n; cnt = 1; }
    else if (v[n] == best) { cnt++; if (randint(cnt) == 0) arg = n; }
  }
  return arg;
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: refsim POLICY SLOTS [SEED]\n"); return 2; }
  const char *pol = argv[1];
  long slots = atol(argv[2]);
  seed_rng(argc > 3 ? strtoull(argv[3], 0, 10) : 1);
  int homogeneous = !strcmp(pol, "led-pod-push") || !strcmp(pol, "pod2");
  double musum = 0;
  for (int n = 0; n < N; n++) { mu[n] = homogeneous ? 0.3 : (n < N / 2 ? 0.1 : 0.5); musum += mu[n]; }
  double acc = 0; for (int n = 0; n < N; n++) { acc += mu[n] / musum; wcum[n] = acc; }
  double lam = 0.95 * musum;
  exp_neg_lam = exp(-lam / M);
  double phat = !strcmp(pol, "led-pod-push") ? 0.01 : 0.1;
  int kind = !strcmp(pol, "wrand") ? 0 : !strcmp(pol, "jsq") ? 1 : !strcmp(pol, "pod2") ? 2
           : !strcmp(pol, "led-jsq-pull") ? 3 : !strcmp(pol, "led-pod-push") ? 4 : -1;
  if (kind < 0) { fprintf(stderr, "unknown policy %s\n", pol); return 2; }
  memset(Q, 0, sizeof Q); memset(est, 0, sizeof est);
  int A[N];
  long long sumq = 0, messages = 0, arrivals = 0;
  struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long t = 0; t < slots; t++) {
    memset(A, 0, sizeof A);
    for (int m = 0; m < M; m++) {
      int a = poisson();
      if (!a) continue;
      arrivals += a;
      int target;
      switch (kind) {
        case 0: { double u = unif(); int lo = 0, hi = N - 1;
                  while (lo < hi) { int mid = (lo + hi) / 2; if (wcum[mid] < u) lo = mid + 1; else hi = mid; }
                  target = lo; break; }
        case 1: target = argmin_random_ties(Q); messages += 2 * N; break;
        case 2: { int i = randint(N), j = randint(N - 1); if (j >= i) j++;
                  target = Q[i] < Q[j] ? i : Q[j] < Q[i] ? j : (randint(2) ? i : j); messages += 4; break; }
        case 3: target = argmin_random_ties(est[m]); break;
        default: { int i = randint(N), j = randint(N - 1); if (j >= i) j++;
                  const int *e = est[m];
                  target = e[i] < e[j] ? i : e[j] < e[i] ? j : (randint(2) ? i : j); break; }
      }
      A[target] += a;
    }
    for (int n = 0; n < N; n++) {
      int q = Q[n] + A[n] - (unif() < mu[n]);
      Q[n] = q > 0 ? q : 0;
      sumq += Q[n];
    }
    if (kind == 3) {
      for (int n = 0; n < N; n++) if (unif() < phat) { est[randint(M)][n] = Q[n]; messages++; }
    } else if (kind == 4) {
      for (int m = 0; m < M; m++) if (unif() < phat) {
        int i = randint(N), j = randint(N - 1); if (j >= i) j++;
        est[m][i] = Q[i]; est[m][j] = Q[j]; messages += 4; }
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double el = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  printf("{\"policy\": \"%s\", \"slots\": %ld, \"seconds\": %.4f, \"slots_per_s\": %.0f, "
         "\"mean_sum_q\": %.4f, \"messages_per_arrival\": %.4f}\n",
         pol, slots, el, slots / el, (double)sumq / slots, arrivals ? (double)messages / arrivals : 0.0);
  return 0;
}
