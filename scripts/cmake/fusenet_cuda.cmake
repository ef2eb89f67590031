# fusenet_cuda.cmake — whether this build has the CUDA backend (FN_CUDA:
# AUTO, ON, OFF) and, when it has, the GPU architectures it compiles for.
#
# Sets FN_HAVE_CUDA (ON/OFF), FN_CUDA_ARCH_TEXT (the architectures in words,
# for `train --version`), and with CUDA enables the language and finds the
# toolkit (CUDA::cudart, cublas, cublasLt, curand).
#
# Architectures: CMAKE_CUDA_ARCHITECTURES when the caller sets it (a list
# such as "86;90", or "native": the GPUs of the building machine); else
# every major architecture from sm_80 (Ampere) to the newest the toolkit
# lists (nvcc --list-gpu-arch) as machine code, plus PTX of the newest,
# which the driver compiles for GPUs newer than the toolkit. Machine code
# for sm_X0 runs on every sm_XY of the same major (sm_80's on an RTX 3090's
# sm_86 and an L4's sm_89), so the majors cover every GPU from Ampere on.
string(TOUPPER "${FN_CUDA}" FN_CUDA)
if(NOT FN_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "FN_CUDA is '${FN_CUDA}': expected AUTO, ON or OFF")
endif()

set(FN_HAVE_CUDA OFF)
set(FN_CUDA_ARCH_TEXT "none")
if(NOT FN_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(FN_HAVE_CUDA ON)
  elseif(FN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FN_CUDA=ON but no CUDA compiler was found: put nvcc on PATH (for "
      "example PATH=/usr/local/cuda/bin:$PATH) or set CMAKE_CUDA_COMPILER, or configure "
      "with -DFN_CUDA=OFF for a CPU-only build")
  else()
    message(STATUS "fusenet: no CUDA compiler found: a CPU-only build (FN_CUDA=AUTO)")
  endif()
endif()

if(FN_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --list-gpu-arch
      OUTPUT_VARIABLE fn_nvcc_archs RESULT_VARIABLE fn_nvcc_rc ERROR_QUIET)
    string(REGEX MATCHALL "compute_[0-9]+" fn_nvcc_archs "${fn_nvcc_archs}")
    set(fn_majors "")
    set(fn_newest 0)
    foreach(arch ${fn_nvcc_archs})
      string(REPLACE "compute_" "" number "${arch}")
      if(number GREATER_EQUAL 80)
        math(EXPR major "${number} / 10 * 10")
        list(APPEND fn_majors ${major})
        if(number GREATER fn_newest)
          set(fn_newest ${number})
        endif()
      endif()
    endforeach()
    list(REMOVE_DUPLICATES fn_majors)
    list(SORT fn_majors COMPARE NATURAL)
    if(NOT fn_nvcc_rc EQUAL 0 OR fn_majors STREQUAL "")
      message(FATAL_ERROR "${CMAKE_CUDA_COMPILER} --list-gpu-arch names no architecture from "
        "sm_80 on; set -DCMAKE_CUDA_ARCHITECTURES (for example 90 or native)")
    endif()
    # Machine code for each major and for the newest; PTX of the newest.
    set(fn_archs "")
    foreach(major ${fn_majors})
      list(APPEND fn_archs ${major}-real)
    endforeach()
    if(NOT fn_newest IN_LIST fn_majors)
      list(APPEND fn_archs ${fn_newest}-real)
    endif()
    list(APPEND fn_archs ${fn_newest}-virtual)
    set(CMAKE_CUDA_ARCHITECTURES "${fn_archs}" CACHE STRING
      "GPU architectures to compile for (default: every major from sm_80 to the newest, and its PTX)")
  endif()
  # The runtime library shared, as the CUDA::cudart the library links, so
  # libfusenet.so and a program see one CUDA runtime.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(fn_words "")
  foreach(arch ${CMAKE_CUDA_ARCHITECTURES})
    if(arch MATCHES "^([0-9]+)-real$")
      list(APPEND fn_words "sm_${CMAKE_MATCH_1}")
    elseif(arch MATCHES "^([0-9]+)-virtual$")
      list(APPEND fn_words "compute_${CMAKE_MATCH_1}(PTX)")
    elseif(arch MATCHES "^([0-9]+)$")
      list(APPEND fn_words "sm_${arch}" "compute_${arch}(PTX)")
    else()
      list(APPEND fn_words "${arch}")
    endif()
  endforeach()
  string(JOIN " " FN_CUDA_ARCH_TEXT ${fn_words})
endif()
