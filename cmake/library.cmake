# writ as a library for other programs: every layer's objects in one shared library
# (writ_lib: libwrit.so.MAJOR -> libwrit.so.X.Y.Z, exported as writ::writ) and one archive
# (writ_static: libwrit.a, exported as writ::writ_static). Their interface is include/writ
# only; the layers (src/) stay internal. writ's own binary and tests link the layers.
include(GNUInstallDirs)

set(WRIT_LIB_OBJECTS $<TARGET_OBJECTS:writ_version_string>)
foreach(layer ${WRIT_LAYERS} cluster)
  list(APPEND WRIT_LIB_OBJECTS $<TARGET_OBJECTS:writ_${layer}>)
endforeach()

add_library(writ_lib SHARED ${WRIT_LIB_OBJECTS})
add_library(writ_static STATIC ${WRIT_LIB_OBJECTS})
add_library(writ::writ ALIAS writ_lib)
add_library(writ::writ_static ALIAS writ_static)
foreach(lib writ_lib writ_static)
  target_include_directories(${lib} PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${lib} PUBLIC cxx_std_20)
  foreach(layer version_string ${WRIT_LAYERS} cluster)
    add_dependencies(${lib} writ_${layer})
  endforeach()
endforeach()
set_target_properties(writ_lib PROPERTIES OUTPUT_NAME writ EXPORT_NAME writ
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
set_target_properties(writ_static PROPERTIES OUTPUT_NAME writ EXPORT_NAME writ_static)

# What the layers link, as the libraries themselves (libfabric is dlopen'ed: headers only).
# The archive names xxhash, isal and simdjson by name once installed, for the consumer's linker.
target_link_libraries(writ_lib PRIVATE OpenSSL::Crypto SQLite::SQLite3 PkgConfig::XXHASH
                      ${ISAL_LIBRARY} PkgConfig::LIBCURL simdjson::simdjson Threads::Threads ${CMAKE_DL_LIBS})
target_link_libraries(writ_static PRIVATE OpenSSL::Crypto SQLite::SQLite3
  $<BUILD_INTERFACE:PkgConfig::XXHASH> $<INSTALL_INTERFACE:xxhash>
  $<BUILD_INTERFACE:${ISAL_LIBRARY}> $<INSTALL_INTERFACE:isal>
  $<BUILD_INTERFACE:PkgConfig::LIBCURL> $<INSTALL_INTERFACE:CURL::libcurl>
  $<BUILD_INTERFACE:simdjson::simdjson> $<INSTALL_INTERFACE:simdjson> Threads::Threads ${CMAKE_DL_LIBS})
if(WRIT_SANITIZE)
  # Nothing in the ASan build uses them (the consumer test runs in the release build only).
  set_target_properties(writ_lib writ_static PROPERTIES EXCLUDE_FROM_ALL TRUE)
else()
  # Every symbol the objects use is resolved here (the sanitizer runtimes come with the program).
  target_link_options(writ_lib PRIVATE LINKER:--no-undefined)
endif()
