# cupti_bench: CUPTI kernel records per second through the library's completion path into the log,
# driven by the fake libcupti (bench/cupti_bench.c).  Run:
#   build/bench/cupti_bench build/tests/fakes/libcupti.so.13
if(TARGET fake_cupti)
  set(_npkit_rt ${PROJECT_SOURCE_DIR}/src/runtime)
  add_executable(cupti_bench ${CMAKE_CURRENT_LIST_DIR}/cupti_bench.c
    ${_npkit_rt}/cupti/cupti_buffers.c ${_npkit_rt}/cupti/cupti_drain.c ${_npkit_rt}/cupti/cupti_loader.c
    ${_npkit_rt}/cupti/cupti_launch_api.c ${_npkit_rt}/cupti/cupti_clock.c ${_npkit_rt}/cupti/cupti_clock_map.c
    ${_npkit_rt}/cupti/cupti_names.c ${_npkit_rt}/cupti/cupti_records.c ${_npkit_rt}/cupti/cupti_corr.c
    ${_npkit_rt}/core/log_writer.c ${_npkit_rt}/core/log_ring.c ${_npkit_rt}/core/batch.c ${_npkit_rt}/api/comm_registry.c ${_npkit_rt}/core/clock.c ${_npkit_rt}/core/tsc_model.c)
  target_include_directories(cupti_bench PRIVATE ${_npkit_rt}/core ${_npkit_rt}/api ${_npkit_rt}/cupti ${PROJECT_SOURCE_DIR}/tests/fakes_cupti)
  target_include_directories(cupti_bench SYSTEM PRIVATE ${NPKIT_CUDA_INCLUDE_DIR})
  target_link_libraries(cupti_bench PRIVATE npkit_all_layers Threads::Threads ${CMAKE_DL_LIBS})
  add_dependencies(cupti_bench fake_cupti)
endif()
