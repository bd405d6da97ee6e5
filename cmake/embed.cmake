# kforge_embed(OUT FILES): writes a C++ file that maps each file's path (relative to the
# source root) to its contents, read by kforge::embedded_file(). Raw string literals keep the
# text as is; the delimiter is one no kernel source contains.
function(kforge_embed out files)
  set(body "#include <map>\n#include <string>\nnamespace kforge::detail {\n")
  string(APPEND body "const std::map<std::string, std::string>& embedded_files() {\n")
  string(APPEND body "  static const std::map<std::string, std::string> files = {\n")
  foreach(f IN LISTS files)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${f})
    file(READ ${f} text)
    string(APPEND body "    {\"${rel}\", R\"kforge_embed(${text})kforge_embed\"},\n")
  endforeach()
  string(APPEND body "  };\n  return files;\n}\n}  // namespace kforge::detail\n")
  file(WRITE ${out}.tmp "${body}")
  configure_file(${out}.tmp ${out} COPYONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${files})
endfunction()
