# fusenet_library.cmake — the library: one set of objects (host C, plus the
# CUDA kernels in a build with CUDA) linked twice, as libfusenet.so (target
# fusenet: SONAME libfusenet.so.MAJOR.MINOR, its dependencies private) and
# libfusenet.a (target fusenet_static, which the tests and bench link: they
# reach private symbols). The version header and the build's description
# (version, commit, backends, GPU architectures) are generated here.

# src/ is laid out by room, lowest floor first (core, dist, store, data, nn,
# optim, run, trainer; DEVELOPERS.md), and inside nn/ and optim/ by family and
# kind (src/nn/layers/block/); it is also the one home of the private headers,
# included by their path under src/ ("nn/layers/block/block_impl.h").
# kernels/ mirrors src/ path for path: a kernel sits in the folder of its
# src/ counterpart (kernels/nn/layers/block/block_cuda.cu). Any
# src/**/cuda_absent*.c gives the answers of a build without CUDA to the calls
# the host C beside it makes into kernels/; they replace kernels/.
file(GLOB_RECURSE FN_HOST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*.c)
file(GLOB_RECURSE FN_CUDA_ABSENT_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/cuda_absent*.c)
list(REMOVE_ITEM FN_HOST_SOURCES ${FN_CUDA_ABSENT_SOURCES})
if(FN_HAVE_CUDA)
  file(GLOB_RECURSE FN_BACKEND_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/*.cu)
  set(FN_CUDA_LIBS CUDA::cudart CUDA::cublas CUDA::cublasLt CUDA::curand)
  set(FN_BACKENDS "cpu cuda")
  set(FN_HAVE_CUDA_01 1)
else()
  set(FN_BACKEND_SOURCES ${FN_CUDA_ABSENT_SOURCES})
  set(FN_CUDA_LIBS "")
  set(FN_BACKENDS "cpu")
  set(FN_HAVE_CUDA_01 0)
endif()

# include/fusenet/version.h from its template; the build's description in
# build_info.h; the commit in a source rewritten by every build when it
# changed (scripts/.. git describe; "unknown" outside a git checkout).
set(FN_GENERATED ${PROJECT_BINARY_DIR}/generated)
configure_file(${PROJECT_SOURCE_DIR}/include/fusenet/version.h.in
  ${FN_GENERATED}/include/fusenet/version.h @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/scripts/cmake/build_info.h.in ${FN_GENERATED}/core/build_info.h @ONLY)
add_custom_target(fn_commit
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DOUTPUT=${FN_GENERATED}/build_commit.c -P ${PROJECT_SOURCE_DIR}/scripts/cmake/build_commit.cmake
  BYPRODUCTS ${FN_GENERATED}/build_commit.c
  COMMENT "fusenet: the commit this build is of")

set(FN_LINK_DEPS ${FN_CUDA_LIBS} ${HDF5_C_LIBRARIES} ${FN_BLAS} PkgConfig::INIH Threads::Threads m)
if(MPI_C_FOUND)
  list(APPEND FN_LINK_DEPS MPI::MPI_C)
endif()
if(FN_NCCL_FOUND)
  list(APPEND FN_LINK_DEPS ${NCCL_LIBRARY})
endif()

add_library(fn_objects OBJECT ${FN_HOST_SOURCES} ${FN_BACKEND_SOURCES}
  ${FN_GENERATED}/build_commit.c)
add_dependencies(fn_objects fn_commit)
target_include_directories(fn_objects
  PUBLIC ${PROJECT_SOURCE_DIR}/include ${FN_GENERATED}/include
  PRIVATE ${PROJECT_SOURCE_DIR}/src ${FN_GENERATED} ${HDF5_INCLUDE_DIRS})
target_compile_definitions(fn_objects PRIVATE ${HDF5_DEFINITIONS}
  $<$<BOOL:${FN_HAVE_CUDA}>:FN_HAVE_CUDA>
  $<$<BOOL:${FN_CUDA_DEBUG_SYNC}>:FN_CUDA_DEBUG_SYNC>
  $<$<BOOL:${FN_TEST_HOOKS}>:FN_TEST_HOOKS>)
# Linked for their include directories and definitions only.
target_link_libraries(fn_objects PRIVATE ${FN_LINK_DEPS})
set_target_properties(fn_objects PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
  POSITION_INDEPENDENT_CODE ON)
if(MPI_C_FOUND)
  target_compile_definitions(fn_objects PRIVATE FN_HAVE_MPI)
endif()
if(FN_NCCL_FOUND)
  target_compile_definitions(fn_objects PRIVATE FN_HAVE_NCCL)
  target_include_directories(fn_objects PRIVATE ${NCCL_INCLUDE_DIR})
endif()
fn_target_flags(fn_objects)
# The shared library exports the public API alone: everything is hidden but
# what a header of include/fusenet/ marks FN_API (include/fusenet/api.h).
# libfusenet.a keeps every symbol linkable, for the white-box tests and bench.
target_compile_options(fn_objects PRIVATE
  $<$<COMPILE_LANGUAGE:C>:-fvisibility=hidden>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fvisibility=hidden>)
# The CPU backends' element-wise loops vectorise only where the compiler may
# evaluate both arms of a select (u > 0 ? 1 : slope): -fno-trapping-math
# promises that no floating-point trap is enabled (none is). Unlike
# -ffast-math it changes no value: the same bits come out.
file(GLOB_RECURSE FN_CPU_BACKEND_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*_cpu.c)
set_source_files_properties(${FN_CPU_BACKEND_SOURCES} PROPERTIES COMPILE_OPTIONS -fno-trapping-math)

foreach(kind SHARED STATIC)
  set(target fusenet)
  if(kind STREQUAL "STATIC")
    set(target fusenet_static)
  endif()
  add_library(${target} ${kind} $<TARGET_OBJECTS:fn_objects>)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${FN_GENERATED}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_target_properties(${target} PROPERTIES OUTPUT_NAME fusenet LINKER_LANGUAGE C
    CUDA_RESOLVE_DEVICE_SYMBOLS OFF)
  if(FN_SANITIZE)
    target_link_options(${target} PRIVATE ${FN_SAN_FLAGS})
  endif()
endforeach()
set_target_properties(fusenet PROPERTIES VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  LINK_DEPENDS ${PROJECT_SOURCE_DIR}/scripts/cmake/fusenet.map)
# Only fn_ names leave the shared library (fusenet.map says why).
target_link_options(fusenet PRIVATE
  "LINKER:--version-script=${PROJECT_SOURCE_DIR}/scripts/cmake/fusenet.map")
target_link_libraries(fusenet PRIVATE ${FN_LINK_DEPS})
target_link_libraries(fusenet_static PUBLIC ${FN_LINK_DEPS})
target_include_directories(fusenet_static PUBLIC $<BUILD_INTERFACE:${HDF5_INCLUDE_DIRS}>)
add_library(fusenet::fusenet ALIAS fusenet)
