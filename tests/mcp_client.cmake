# `kforge mcp` tested with the official MCP Python SDK as the client (tests/mcp/mcp_client_test.py):
# tools, evaluations (passed, incorrect, crashed), an unknown tool, malformed input at the raw
# stdio level, and a tune that is cancelled after its first progress notification.
# The SDK comes from tools/install-deps (pip package `mcp`); without it the test fails, loudly.
find_program(KFORGE_PYTHON3 NAMES python3)
if(KFORGE_PYTHON3)
  add_test(NAME mcp_client
    COMMAND ${KFORGE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/mcp/mcp_client_test.py
            --kforge $<TARGET_FILE:kforge> --root ${CMAKE_SOURCE_DIR})
else()
  add_test(NAME mcp_client COMMAND sh -c "echo 'FAIL: python3 not found: run tools/install-deps' >&2; exit 1")
endif()
set_tests_properties(mcp_client PROPERTIES TIMEOUT 300 ENVIRONMENT OPENBLAS_THREAD_TIMEOUT=1)
