# The CUDA sm_90 compile check: nvcc -arch=sm_90 -c on every kernels/*/*.cu (once per dtype of
# each CUDA spec that names it, with the spec's default parameters as -D flags) and on
# src/measure/ceilings/ceilings.cu, each behind the CUDA prelude (-include
# src/backend/cuda/prelude.cuh, which the cuda backend puts in front of every source). Fails
# when any of them does not compile.
#
# Not in the default run: CudaBackend.EveryLibraryKernelCompilesThroughTheBackend compiles the
# same kernels for sm_90 through NVRTC, the compiler kforge uses, in a third of the time. Turn
# this one on with -DKFORGE_NVCC_CHECK=ON to check the offline compiler too.
#
# This file plays two parts: included by tests/CMakeLists.txt it adds the CTest case; run as
# `cmake -DNVCC=... -DSOURCE_DIR=... -DOUT_DIR=... -P cuda_compile.cmake` it does the check.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  option(KFORGE_NVCC_CHECK "CTest case: nvcc compiles every CUDA kernel for sm_90" OFF)
  if(NOT KFORGE_NVCC_CHECK)
    return()
  endif()
  if(KFORGE_WITH_CUDA AND CUDAToolkit_NVCC_EXECUTABLE)
    add_test(NAME cuda_compile_sm90
      COMMAND ${CMAKE_COMMAND} -DNVCC=${CUDAToolkit_NVCC_EXECUTABLE}
              -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DOUT_DIR=${CMAKE_BINARY_DIR}/cuda_compile
              -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(cuda_compile_sm90 PROPERTIES TIMEOUT 900)
  elseif(KFORGE_WITH_CUDA)
    message(STATUS "CUDA compile check: nvcc not found, test cuda_compile_sm90 not added")
  endif()
  return()
endif()

# --- script mode ---------------------------------------------------------------------------
file(MAKE_DIRECTORY ${OUT_DIR})
set(failures 0)
set(compiled 0)

# nvcc -arch=sm_90 -c `src` with `flags`; counts a failure and prints nvcc's words.
function(compile_one src tag flags)
  get_filename_component(stem ${src} NAME_WE)
  set(obj ${OUT_DIR}/${stem}-${tag}.o)
  execute_process(COMMAND ${NVCC} -arch=sm_90 -std=c++17
                          -include ${SOURCE_DIR}/src/backend/cuda/prelude.cuh -c ${src} -o ${obj} ${flags}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " shown "${flags}")
  if(rc EQUAL 0)
    message(STATUS "ok    ${src} ${shown}")
  else()
    message(STATUS "FAIL  ${src} ${shown}\n${out}${err}")
    math(EXPR n "${failures} + 1")
    set(failures ${n} PARENT_SCOPE)
  endif()
  math(EXPR n "${compiled} + 1")
  set(compiled ${n} PARENT_SCOPE)
endfunction()

file(GLOB kernel_sources ${SOURCE_DIR}/kernels/*/*.cu)
foreach(src IN LISTS kernel_sources)
  get_filename_component(dir ${src} DIRECTORY)
  get_filename_component(name ${src} NAME)
  file(GLOB specs ${dir}/*.json)
  set(found FALSE)
  foreach(spec IN LISTS specs)
    file(READ ${spec} text)
    string(JSON lang ERROR_VARIABLE e GET "${text}" lang)
    string(JSON spec_source ERROR_VARIABLE e2 GET "${text}" source)
    if(NOT lang STREQUAL "cuda" OR NOT spec_source STREQUAL name)
      continue()
    endif()
    set(found TRUE)
    set(defines "")
    string(JSON ndefaults ERROR_VARIABLE e LENGTH "${text}" defaults)
    if(ndefaults GREATER 0)
      math(EXPR last "${ndefaults} - 1")
      foreach(i RANGE ${last})
        string(JSON key MEMBER "${text}" defaults ${i})
        string(JSON value GET "${text}" defaults ${key})
        list(APPEND defines -D${key}=${value})
      endforeach()
    endif()
    set(dtypes fp32)
    string(JSON ndtypes ERROR_VARIABLE e LENGTH "${text}" dtypes)
    if(ndtypes GREATER 0)
      set(dtypes "")
      math(EXPR last "${ndtypes} - 1")
      foreach(i RANGE ${last})
        string(JSON d GET "${text}" dtypes ${i})
        list(APPEND dtypes ${d})
      endforeach()
    endif()
    get_filename_component(spec_stem ${spec} NAME_WE)
    foreach(d IN LISTS dtypes)
      string(TOUPPER ${d} D)
      # Specs that share a source and its defaults (one per problem of a family) compile once.
      set(key "${src};${defines};${D}")
      string(MD5 key "${key}")
      list(FIND done_keys ${key} seen)
      if(NOT seen EQUAL -1)
        continue()
      endif()
      list(APPEND done_keys ${key})
      compile_one(${src} ${spec_stem}-${d} "${defines};-DKF_DTYPE_${D}=1")
    endforeach()
  endforeach()
  if(NOT found)  # a .cu no spec names yet: at least it must compile on its own
    compile_one(${src} plain "-DKF_DTYPE_FP32=1")
  endif()
endforeach()

compile_one(${SOURCE_DIR}/src/measure/ceilings/ceilings.cu ceilings "-DKF_DTYPE_FP32=1")

message(STATUS "${compiled} CUDA compilation(s) for sm_90, ${failures} failed")
if(failures GREATER 0 OR compiled EQUAL 0)
  message(FATAL_ERROR "the CUDA sm_90 compile check failed")
endif()
