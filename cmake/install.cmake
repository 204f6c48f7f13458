# `cmake --install BUILD --prefix P`: the public headers, libwrit.so and libwrit.a, the writ
# binary, the CMake package (find_package(writ)) and writ.pc (pkg-config). docs/api.md.
include(CMakePackageConfigHelpers)

set(WRIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/writ)
install(TARGETS writ_lib writ_static EXPORT writTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS writ RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/writ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(EXPORT writTargets NAMESPACE writ:: DESTINATION ${WRIT_CMAKE_DIR})

configure_package_config_file(cmake/writConfig.cmake.in
  ${CMAKE_BINARY_DIR}/package/writConfig.cmake INSTALL_DESTINATION ${WRIT_CMAKE_DIR})
# Before 1.0 a minor release may change the API and the ABI: only the same MAJOR.MINOR fits.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/writConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/writConfig.cmake
  ${CMAKE_BINARY_DIR}/package/writConfigVersion.cmake DESTINATION ${WRIT_CMAKE_DIR})

# writ.pc finds its prefix from where it lies (${pcfiledir}), so the prefix can move.
file(RELATIVE_PATH WRIT_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" WRIT_PC_TO_PREFIX "${WRIT_PC_TO_PREFIX}")
configure_file(cmake/writ.pc.in ${CMAKE_BINARY_DIR}/package/writ.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/writ.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
