# cmake -DCOMPILER=... -DFLAGS=a;b -DSOURCE=... -DEXPECT=regex -P expect_compile_failure.cmake
# Passes only when compiling SOURCE fails with a diagnostic matching EXPECT.
execute_process(COMMAND ${COMPILER} ${FLAGS} ${SOURCE} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it reads a guarded member without its mutex")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "${SOURCE} failed without the expected '${EXPECT}':\n${out}")
endif()
message(STATUS "refused as expected:\n${out}")
