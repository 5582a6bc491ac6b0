/* Readable kernel names (src/runtime/cupti_names.c): the built-in demangler, used when the process
 * has no C++ runtime, and the cutting of the C++ runtime's demangled names.  Run twice by ctest:
 * plain, and with "--cxx", which loads libstdc++ first so that __cxa_demangle is there (a
 * sanitizer runtime may provide one in the plain run too). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cupti_names.h"

static int failed;

static void report(const char *what, const char *raw, const char *got, size_t n, const char *want) {
  if (strcmp(got, want) != 0 || n != strlen(want)) {
    fprintf(stderr, "FAIL (%s): %s\n  got  '%s' (%zu)\n  want '%s'\n", what, raw, got, n, want);
    failed = 1;
  }
}

/* What npkit_kernel_readable gives. */
static void readable(const char *raw, const char *want) {
  char out[NPKIT_KERNEL_NAME_MAX + 1];
  size_t n = npkit_kernel_readable(raw, out, sizeof out);
  report("readable", raw, out, n, want);
}

/* What the built-in demangler gives; want NULL: it must give up. */
static void builtin(const char *raw, const char *want) {
  char out[NPKIT_KERNEL_NAME_MAX + 1];
  int n = npkit_kernel_demangle_builtin(raw, out, sizeof out);
  if (want == NULL) {
    if (n != -1 || out[0] != '\0') {
      fprintf(stderr, "FAIL (builtin): %s gave '%s' (%d), want nothing\n", raw, out, n);
      failed = 1;
    }
    return;
  }
  report("builtin", raw, out, n < 0 ? 0 : (size_t)n, want);
}

static const char *const AT_KERNEL =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";

int main(int argc, char **argv) {
  int cxx = argc > 1 && strcmp(argv[1], "--cxx") == 0;
  if (cxx && dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL) == NULL) {
    fprintf(stderr, "FAIL: cannot load libstdc++.so.6: %s\n", dlerror());
    return 1;
  }
  int runtime = dlsym(RTLD_DEFAULT, "__cxa_demangle") != NULL;
  if (cxx && !runtime) {
    fprintf(stderr, "FAIL: no __cxa_demangle after loading libstdc++\n");
    return 1;
  }

  /* The built-in demangler, whatever the process has. */
  builtin("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
          "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  builtin("_Z13computeKernelPfi", "computeKernel");
  builtin("_ZN5cudnn3cnn11conv_kernelEPKfPf", "cudnn::cnn::conv_kernel");
  builtin("_ZN12_GLOBAL__N_16reduceEPf", "(anonymous namespace)::reduce");
  builtin("_ZNSt6vector4sizeEv", "std::vector::size");
  builtin("_ZL13oneRankReduceI13FuncPreMulSumIfEEvPvS2_mmb", "oneRankReduce<...>");
  builtin(AT_KERNEL, "at::native::vectorized_elementwise_kernel<...>");
  builtin("_Z10add_kernelIfEvPT_S1_i", "add_kernel<...>");
  builtin("_ZN7cutlass6KernelINS_4gemm6kernel4GemmILi3EEEEEvNT_6ParamsE", "cutlass::Kernel<...>");
  builtin("_Z99tooshort", NULL);
  builtin("my_c_kernel", NULL);

  /* Readable names: identical either way for names without templates. */
  readable("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
           "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  readable("_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE", "ncclDevKernel_SendRecv");
  readable("_Z13computeKernelPfi", "computeKernel");
  readable("_ZN5cudnn3cnn11conv_kernelEPKfPf", "cudnn::cnn::conv_kernel");
  readable("_ZN12_GLOBAL__N_16reduceEPf", "(anonymous namespace)::reduce");
  readable("_ZNSt6vector4sizeEv", "std::vector::size");
  /* Not mangled: extern "C" kernels and names CUPTI already gives readable. */
  readable("my_c_kernel", "my_c_kernel");
  readable("void foo(int)", "foo");
  readable("", "");
  if (runtime) {
    readable(AT_KERNEL, "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                        "std::array<char*, 1ul> >");
    readable("_Z10add_kernelIfEvPT_S1_i", "add_kernel<float>");
    readable("_ZL13oneRankReduceI13FuncPreMulSumIfEEvPvS2_mmb", "oneRankReduce<FuncPreMulSum<float> >");
  } else {
    readable(AT_KERNEL, "at::native::vectorized_elementwise_kernel<...>");
    readable("_Z10add_kernelIfEvPT_S1_i", "add_kernel<...>");
    /* Broken input: shown as it is rather than guessed. */
    readable("_Z99tooshort", "_Z99tooshort");
  }
  /* A name longer than the limit is cut to it. */
  char longname[3000];
  memset(longname, 'k', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  char out[NPKIT_KERNEL_NAME_MAX + 1];
  size_t n = npkit_kernel_readable(longname, out, sizeof out);
  if (n != NPKIT_KERNEL_NAME_MAX) {
    fprintf(stderr, "FAIL: a %zu-byte name gives %zu bytes, want %d\n", strlen(longname), n,
            NPKIT_KERNEL_NAME_MAX);
    failed = 1;
  }
  if (!failed) printf("kernel names (%s): ok\n", runtime ? "built-in and C++ runtime" : "built-in");
  return failed;
}
