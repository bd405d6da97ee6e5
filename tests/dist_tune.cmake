# `mpirun -n R kforge tune` (src/dist/): the ranks evaluate the same configurations as one rank,
# a rank killed mid-run loses only its evaluation in flight, and rank 0's store stays intact
# (tests/dist/dist_tune_test.py); `kforge agent` batches over ranks answer with the one-rank
# verdicts (tests/dist/agent_dist_test.py). Registered only when kforge is built with MPI and
# mpirun exists.
if(KFORGE_WITH_MPI)
  find_program(KFORGE_MPIRUN NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
  find_program(KFORGE_PYTHON3 NAMES python3)
  if(KFORGE_MPIRUN AND KFORGE_PYTHON3)
    add_test(NAME dist_tune
      COMMAND ${KFORGE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/dist/dist_tune_test.py
              --kforge $<TARGET_FILE:kforge> --mpirun ${KFORGE_MPIRUN})
    # mpirun refuses root unless told; harmless for any other user.
    set_tests_properties(dist_tune PROPERTIES TIMEOUT 300 ENVIRONMENT
      "OPENBLAS_THREAD_TIMEOUT=1;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
    # The overlapped multi-rank GEMMs (tests/dist/overlap_test.py, docs/overlap.md).
    add_test(NAME dist_overlap
      COMMAND ${KFORGE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/dist/overlap_test.py
              --kforge $<TARGET_FILE:kforge> --mpirun ${KFORGE_MPIRUN})
    set_tests_properties(dist_overlap PROPERTIES TIMEOUT 300 ENVIRONMENT
      "OPENBLAS_THREAD_TIMEOUT=1;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
    # The MoE layer and GNN aggregation across ranks (tests/dist/moe_gnn_dist_test.py).
    add_test(NAME dist_moe_gnn
      COMMAND ${KFORGE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/dist/moe_gnn_dist_test.py
              --kforge $<TARGET_FILE:kforge> --mpirun ${KFORGE_MPIRUN})
    set_tests_properties(dist_moe_gnn PROPERTIES TIMEOUT 300 ENVIRONMENT
      "OPENBLAS_THREAD_TIMEOUT=1;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
    # A batch of `kforge agent` candidates over 2 ranks (tests/dist/agent_dist_test.py).
    add_test(NAME dist_agent
      COMMAND ${KFORGE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/dist/agent_dist_test.py
              --kforge $<TARGET_FILE:kforge> --mpirun ${KFORGE_MPIRUN})
    set_tests_properties(dist_agent PROPERTIES TIMEOUT 300 ENVIRONMENT
      "OPENBLAS_THREAD_TIMEOUT=1;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  endif()
endif()
