# kernel_kmeans_dist (bench/kernel_kmeans_dist.cpp): kernel k-means over 1-4 MPI ranks, 1D and
# 2D distributions, labels identical to one rank's, words per rank equal to the analysis
# (tests/dist/kernel_kmeans_dist_test.py). Registered only when kforge is built with MPI.
if(KFORGE_WITH_MPI)
  find_program(KFORGE_MPIRUN NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
  find_program(KFORGE_PYTHON3 NAMES python3)
  if(KFORGE_MPIRUN AND KFORGE_PYTHON3)
    add_test(NAME dist_kernel_kmeans
      COMMAND ${KFORGE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/dist/kernel_kmeans_dist_test.py
              --prog $<TARGET_FILE:kernel_kmeans_dist> --mpirun ${KFORGE_MPIRUN})
    set_tests_properties(dist_kernel_kmeans PROPERTIES TIMEOUT 300 ENVIRONMENT
      "OPENBLAS_THREAD_TIMEOUT=1;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
    # The bench programs are not in the default build; this one is, for the test.
    add_custom_target(dist_kernel_kmeans_program ALL)
    add_dependencies(dist_kernel_kmeans_program kernel_kmeans_dist)
    # One step of it as a kforge command on the kernel_kmeans problem: `kforge overlap
    # kernel_kmeans_dist`, 1d against 2d, verified, words per rank as the analysis.
    add_test(NAME dist_kernel_kmeans_overlap
      COMMAND ${KFORGE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/dist/kernel_kmeans_overlap_test.py
              --kforge $<TARGET_FILE:kforge> --mpirun ${KFORGE_MPIRUN})
    set_tests_properties(dist_kernel_kmeans_overlap PROPERTIES TIMEOUT 300 ENVIRONMENT
      "OPENBLAS_THREAD_TIMEOUT=1;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  endif()
endif()
