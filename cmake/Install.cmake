# The installed package: libraries with an export set, the public headers, a CMake config
# (find_package(actrain 0.2 REQUIRED COMPONENTS ...)), a pkg-config file, the actrain binary and
# the sample configs.
include(CMakePackageConfigHelpers)
set(ACTRAIN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/actrain)
set(_targets actrain_core actrain_cuda actrain_engine actrain_cluster actrain_observe
             actrain_testing)
install(TARGETS ${_targets} EXPORT actrainTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/actrain DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT actrainTargets NAMESPACE actrain:: DESTINATION ${ACTRAIN_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/actrainConfig.cmake.in
  ${PROJECT_BINARY_DIR}/actrainConfig.cmake INSTALL_DESTINATION ${ACTRAIN_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/actrainConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/actrainConfig.cmake
              ${PROJECT_BINARY_DIR}/actrainConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake
        DESTINATION ${ACTRAIN_CMAKE_DIR})

# pkg-config: one file for the whole library stack (static archives need every one, in order).
if(BUILD_SHARED_LIBS)
  set(ACTRAIN_PC_PRIVATE "")
else()
  set(ACTRAIN_PC_PRIVATE "-lcaf_openssl -lcaf_io -lcaf_core -lssl -lcrypto -lopenblas -lz -lpthread")
endif()
if(ACTRAIN_HAVE_CUDA)
  string(APPEND ACTRAIN_PC_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcublas -lcudart")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/actrain.pc.in ${PROJECT_BINARY_DIR}/actrain.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/actrain.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(TARGET actrain)
  set_target_properties(actrain PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS actrain RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/config/ DESTINATION ${CMAKE_INSTALL_DATADIR}/actrain/config)
