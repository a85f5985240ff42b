# Installation and export: `find_package(tgc CONFIG)` gives tgc::tgc (the JIT:
# compiler + runtime) and tgc::runtime (the slim runtime), both carrying
# LibTorch as a usage requirement. A tgcConfig.cmake is generated in the build
# tree too (tests/install builds a downstream project against both).
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

add_library(tgc INTERFACE)
target_link_libraries(tgc INTERFACE tgc_compiler tgc_runtime)
set_target_properties(tgc_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(tgc_compiler PROPERTIES EXPORT_NAME compiler)

install(TARGETS tgc tgc_compiler tgc_runtime EXPORT tgcTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY compiler/include/tgc runtime/include/tgc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT tgcTargets NAMESPACE tgc::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tgc)

configure_package_config_file(cmake/tgcConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/install/tgcConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tgc)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tgcConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/install/tgcConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/tgcConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tgc)

# Build tree: tgc_DIR=<build> works without installing.
export(EXPORT tgcTargets NAMESPACE tgc:: FILE ${CMAKE_CURRENT_BINARY_DIR}/tgcTargets.cmake)
configure_package_config_file(cmake/tgcConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tgcConfig.cmake
  INSTALL_DESTINATION ${CMAKE_CURRENT_BINARY_DIR})
