# fusenet_install.cmake — `cmake --install` and CPack's .deb: the public
# headers under include/fusenet/, libfusenet.so (with its SONAME link) and
# libfusenet.a, the programs (train, predict, export), the CMake package (find_package(fusenet):
# the target fusenet::fusenet, the shared library, and FUSENET_HAS_CUDA /
# FUSENET_BACKENDS / FUSENET_CUDA_ARCHITECTURES for the variant), and
# fusenet.pc for pkg-config (`pkg-config --static` adds what libfusenet.a
# needs).
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fusenet ${FN_GENERATED}/include/fusenet
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT devel FILES_MATCHING PATTERN "*.h")
install(TARGETS fusenet EXPORT fusenetTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT devel)
install(TARGETS fusenet_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
# The programs find libfusenet.so beside them in a prefix of their own
# (../lib) or in the system's directories (a .deb's /usr).
set_target_properties(${FN_INSTALLED_PROGRAMS} PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS ${FN_INSTALLED_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT runtime)

set(FN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fusenet)
install(EXPORT fusenetTargets NAMESPACE fusenet:: DESTINATION ${FN_CMAKE_DIR} COMPONENT devel)
configure_package_config_file(${PROJECT_SOURCE_DIR}/scripts/cmake/fusenetConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fusenetConfig.cmake INSTALL_DESTINATION ${FN_CMAKE_DIR})
# Within one minor version the API only grows (0.x: the minor counts).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fusenetConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fusenetConfig.cmake
  ${PROJECT_BINARY_DIR}/fusenetConfigVersion.cmake DESTINATION ${FN_CMAKE_DIR} COMPONENT devel)

# fusenet.pc: Libs.private and Requires.private are what libfusenet.a needs.
set(FN_PC_LIBS_PRIVATE "")
foreach(lib ${HDF5_C_LIBRARIES} ${NCCL_LIBRARY} ${MPI_C_LIBRARIES})
  string(APPEND FN_PC_LIBS_PRIVATE " ${lib}")
endforeach()
if(FN_HAVE_CUDA)
  string(APPEND FN_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcublasLt -lcublas -lcurand -lcudart")
endif()
if(NOT OPENBLAS_FOUND)
  string(APPEND FN_PC_LIBS_PRIVATE " ${OPENBLAS_LIBRARY}")
endif()
string(APPEND FN_PC_LIBS_PRIVATE " -lpthread -lm")
# The prefix relative to the .pc file, so a prefix given at install time
# (cmake --install --prefix, a .deb's /usr) is the one it names.
file(RELATIVE_PATH FN_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/scripts/cmake/fusenet.pc.in ${PROJECT_BINARY_DIR}/fusenet.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fusenet.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT devel)

# CPack: one .deb of every component, named for its variant
# (fusenet_0.1.0_amd64.deb, fusenet-cpu_... for a build without CUDA).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fusenet)
if(NOT FN_HAVE_CUDA)
  set(CPACK_PACKAGE_NAME fusenet-cpu)
endif()
set(CPACK_PACKAGE_VENDOR "fusenet")
set(CPACK_PACKAGE_CONTACT "fusenet maintainers <fusenet@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Training framework in C11 and CUDA for fused Linear-GroupNorm-LeakyReLU networks")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
if(FN_HAVE_CUDA)
  # The CUDA libraries come from NVIDIA's toolkit, not a Debian package
  # dpkg-shlibdeps can name.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
endif()
include(CPack)
