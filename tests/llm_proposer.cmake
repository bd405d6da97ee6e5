# examples/proposers/llm.py tested against a fake OpenAI-compatible server on 127.0.0.1
# (tests/agent/fake_llm_server.py, never a network): the reply parsing, the HTTP retries (500,
# 429 with Retry-After, timeouts), the bounded conversation, and `kforge agent --problem gemm`
# end to end: the tail bug caught, its feedback in the next request, a reply without code that
# costs no attempt, the run ending passed on the fast kernel. Python 3 standard library only.
find_program(KFORGE_PYTHON3 NAMES python3)
if(KFORGE_PYTHON3)
  add_test(NAME llm_proposer
    COMMAND ${KFORGE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/agent/llm_proposer_test.py
            --kforge $<TARGET_FILE:kforge> --root ${CMAKE_SOURCE_DIR})
else()
  add_test(NAME llm_proposer COMMAND sh -c "echo 'FAIL: python3 not found' >&2; exit 1")
endif()
set_tests_properties(llm_proposer PROPERTIES TIMEOUT 120 ENVIRONMENT OPENBLAS_THREAD_TIMEOUT=1)
