# The libraries below the tool and the preloaded library, one per folder of src/.  Each sees the
# headers of its own folder and of the libraries it links, nothing else, so that an include
# against the layering does not compile:
#   format  <-  job, npkit_dump  <-  trace (format, npkit_dump)  <-  merge (job, trace)
#   report (job, trace, format)  <-  tool
#   metrics (format)  <-  tool, the preloaded library
# Built position independent and with hidden visibility: they are linked into the shared library.
function(npkit_add_layer name)
  add_library(${name} STATIC ${ARGN})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  target_compile_definitions(${name} PUBLIC _GNU_SOURCE NPKIT_VERSION_STRING="${PROJECT_VERSION}")
  set_target_properties(${name} PROPERTIES C_VISIBILITY_PRESET hidden)
endfunction()

add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/format ${PROJECT_BINARY_DIR}/src/format)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/job ${PROJECT_BINARY_DIR}/src/job)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/npkit_dump ${PROJECT_BINARY_DIR}/src/npkit_dump)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/trace ${PROJECT_BINARY_DIR}/src/trace)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/merge ${PROJECT_BINARY_DIR}/src/merge)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/report ${PROJECT_BINARY_DIR}/src/report)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/metrics ${PROJECT_BINARY_DIR}/src/metrics)

# All of them at once, for the code that has not yet named the layers it needs.
add_library(npkit_all_layers INTERFACE)
target_link_libraries(npkit_all_layers INTERFACE npkit_report npkit_merge npkit_trace npkit_job npkit_npkit_dump
                      npkit_metrics npkit_format)
