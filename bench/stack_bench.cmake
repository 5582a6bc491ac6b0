# Call-stack cost (bench/stack_overhead.c, run by bench/stack_overhead.sh).  -O2 -g whatever the
# build type: the number is meant for optimised jobs.
if(TARGET fake_nccl)
  add_executable(stack_overhead ${CMAKE_CURRENT_LIST_DIR}/stack_overhead.c)
  target_include_directories(stack_overhead SYSTEM PRIVATE ${NPKIT_CUDA_INCLUDE_DIR})
  target_link_libraries(stack_overhead PRIVATE fake_nccl)
  target_compile_options(stack_overhead PRIVATE -O2 -g)
endif()
