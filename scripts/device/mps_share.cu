// mps_share: what a job sharing a GPU can do, for scripts/device/mps-check (issue 42). Built
// with nvcc on a machine with a GPU; no part of Baton's build.
//
//   mps_share alloc GIB [HOLD_S]  allocate GIB GiB of device memory in 256 MiB pieces (and
//                                 hold it HOLD_S seconds); exit 0 when all of it was had, 2 at
//                                 the first allocation refused (out of memory), 1 otherwise
//   mps_share spin [SECONDS]      run a kernel that fills every SM over and over for SECONDS
//                                 (default 5) and print how many rounds a second it ran
//
// Each prints one line, `mps_share: ...`, with what it had and the MPS variables it saw.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "-";
}

void SayMps() {
  std::printf("mps_share: CUDA_VISIBLE_DEVICES=%s CUDA_MPS_PIPE_DIRECTORY=%s "
              "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=%s\n",
              Env("CUDA_VISIBLE_DEVICES"), Env("CUDA_MPS_PIPE_DIRECTORY"),
              Env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), Env("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
}

int Alloc(double gib, double hold_s) {
  const size_t piece = size_t{256} << 20;
  const size_t want = static_cast<size_t>(gib * static_cast<double>(size_t{1} << 30));
  std::vector<void*> pieces;
  size_t had = 0;
  int code = 0;
  while (had < want) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, piece);
    if (e != cudaSuccess) {
      std::printf("mps_share: alloc refused after %zu MiB of %zu MiB: %s (%s)\n", had >> 20,
                  want >> 20, cudaGetErrorName(e), cudaGetErrorString(e));
      code = e == cudaErrorMemoryAllocation ? 2 : 1;
      break;
    }
    cudaMemset(p, 1, piece);  // touched: the pages are really the job's
    pieces.push_back(p);
    had += piece;
  }
  if (code == 0) {
    cudaDeviceSynchronize();
    std::printf("mps_share: alloc had all %zu MiB\n", had >> 20);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_s));
  }
  for (void* p : pieces) cudaFree(p);
  return code;
}

__global__ void Burn(float* out, int rounds) {
  float x = static_cast<float>(threadIdx.x);
  for (int i = 0; i < rounds; ++i) x = x * 1.000001f + 0.5f;
  if (x == 42.0f) out[0] = x;  // never: keeps the loop
}

int Spin(double seconds) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* out = nullptr;
  if (cudaMalloc(&out, sizeof(float)) != cudaSuccess) {
    std::printf("mps_share: spin could not allocate\n");
    return 1;
  }
  // Many blocks of each SM's worth of threads: the kernel takes every SM it is given.
  const int blocks = sms * 32;
  Burn<<<blocks, 256>>>(out, 1 << 12);  // warm-up
  cudaDeviceSynchronize();
  const auto start = std::chrono::steady_clock::now();
  long launches = 0;
  double elapsed = 0;
  while (elapsed < seconds) {
    Burn<<<blocks, 256>>>(out, 1 << 14);
    cudaDeviceSynchronize();
    ++launches;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    std::printf("mps_share: spin failed: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::printf("mps_share: spin %.2f rounds/s over %.1f s (%d SMs reported)\n",
              static_cast<double>(launches) / elapsed, elapsed, sms);
  cudaFree(out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  SayMps();
  std::fflush(stdout);
  if (argc >= 3 && std::strcmp(argv[1], "alloc") == 0)
    return Alloc(std::atof(argv[2]), argc >= 4 ? std::atof(argv[3]) : 0);
  if (argc >= 2 && std::strcmp(argv[1], "spin") == 0)
    return Spin(argc >= 3 ? std::atof(argv[2]) : 5);
  std::fprintf(stderr, "usage: mps_share alloc GIB [HOLD_S] | spin [SECONDS]\n");
  return 64;
}
