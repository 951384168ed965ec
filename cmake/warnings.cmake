# flashsinkhorn_warnings(target): the warning set every target of ours compiles with.
function(flashsinkhorn_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
  if(FLASHSINKHORN_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

# flashsinkhorn_native_eigen_sources(files...): sources of this directory that include Eigen and are
# built with -march=native. GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsics
# (the `__Y = __Y` idiom of avxintrin.h) wherever Eigen's packet code is inlined on an AVX-512 host: a
# false positive that SYSTEM includes cannot silence, since it is reported at the inlining site.
function(flashsinkhorn_native_eigen_sources)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND FLASHSINKHORN_NATIVE)
    set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS -Wno-maybe-uninitialized)
  endif()
endfunction()
