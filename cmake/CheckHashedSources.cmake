# Fails unless every source file under the folders that shape compiled
# artifacts (${ROOT}/{dialects,passes,codegen,compiler,runtime}) is listed in
# ${LISTING}, the files cmake/HashSources.cmake hashed into TGC_CODEGEN_HASH.
# A file left out of the hash can change a cached kernel or plan's meaning
# while its key stays the same: a stale artifact served as a hit.
file(READ ${LISTING} listing)
string(REPLACE "\n" ";" hashed "${listing}")
file(GLOB_RECURSE present
  ${ROOT}/dialects/* ${ROOT}/passes/* ${ROOT}/codegen/* ${ROOT}/compiler/* ${ROOT}/runtime/*)
set(missing "")
foreach(f ${present})
  get_filename_component(name ${f} NAME)
  if(name STREQUAL "CMakeLists.txt" OR name MATCHES "^\\." OR name MATCHES "\\.md$")
    continue()
  endif()
  list(FIND hashed ${f} at)
  if(at EQUAL -1)
    list(APPEND missing ${f})
  endif()
endforeach()
list(LENGTH hashed n)
if(missing)
  string(REPLACE ";" "\n  " shown "${missing}")
  message(FATAL_ERROR "not part of TGC_CODEGEN_HASH (runtime/CMakeLists.txt TGC_HASHED_GLOBS):\n  ${shown}")
endif()
message(STATUS "${n} hashed sources cover every file of the compiler, codegen and runtime")
