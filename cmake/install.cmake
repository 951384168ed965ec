# Installs the library, the CLI and a CMake package: find_package(flashsinkhorn) → flashsinkhorn::flashsinkhorn
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_flashsinkhorn_targets flashsinkhorn)
if(FLASHSINKHORN_HAS_CUDA)
  list(APPEND _flashsinkhorn_targets flashsinkhorn_cuda)
endif()
install(TARGETS ${_flashsinkhorn_targets} EXPORT flashsinkhornTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/flashsinkhorn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT flashsinkhornTargets NAMESPACE flashsinkhorn::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flashsinkhorn)

configure_package_config_file(cmake/flashsinkhornConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/flashsinkhornConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flashsinkhorn)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/flashsinkhornConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/flashsinkhornConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/flashsinkhornConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flashsinkhorn)
if(TARGET flashsinkhorn_cli)
  install(TARGETS flashsinkhorn_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
