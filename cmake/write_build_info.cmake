# cmake -DSOURCE_DIR=... -DRELEASE=... -DGIT=... -DOUTPUT=... -P write_build_info.cmake
# Writes OUTPUT from build_info.h.in: the release and, when SOURCE_DIR is a git checkout of
# its own, `git describe --always --dirty`. Runs at every build; configure_file rewrites the
# file only when its text changes, so an unchanged revision rebuilds nothing.
set(VERSION_STRING "${RELEASE}")
if(GIT)
  execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} rev-parse --show-toplevel
                  OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE failed)
  # A source tree unpacked inside some other checkout is not built from a checkout.
  if(NOT failed AND top)
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SOURCE_DIR}" source)
    if(top STREQUAL source)
      execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} describe --always --dirty
                      OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                      RESULT_VARIABLE failed)
      if(NOT failed AND revision)
        set(VERSION_STRING "${RELEASE} (git ${revision})")
      endif()
    endif()
  endif()
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/build_info.h.in ${OUTPUT} @ONLY)
