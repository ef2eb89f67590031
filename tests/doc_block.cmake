# doc_block.cmake — fails unless a docs page shows a source file as it is:
# the page holds the marker line "<!-- file: PATH -->", then a fenced code
# block whose text must equal the file PATH (relative to ROOT) byte for
# byte, so a page's example is the program that the build compiles and a
# test runs. Usage: cmake -DROOT=<repo> -DPAGE=docs/x.md -P doc_block.cmake
file(READ "${ROOT}/${PAGE}" page)
string(REGEX MATCHALL "<!-- file: [^ ]+ -->" markers "${page}")
if(NOT markers)
  message(FATAL_ERROR "${PAGE}: no <!-- file: PATH --> marker")
endif()
foreach(marker ${markers})
  string(REGEX REPLACE "<!-- file: ([^ ]+) -->" "\\1" path "${marker}")
  string(FIND "${page}" "${marker}" at)
  string(SUBSTRING "${page}" ${at} -1 rest)
  # The block after the marker: from the line after its opening fence to
  # the closing fence at the start of a line.
  string(FIND "${rest}" "\n```" open)
  math(EXPR open "${open} + 4")
  string(SUBSTRING "${rest}" ${open} -1 rest)
  string(FIND "${rest}" "\n" eol)
  math(EXPR eol "${eol} + 1")
  string(SUBSTRING "${rest}" ${eol} -1 rest)
  string(FIND "${rest}" "\n```" close)
  if(close EQUAL -1)
    message(FATAL_ERROR "${PAGE}: the block of ${path} is not closed")
  endif()
  math(EXPR close "${close} + 1")
  string(SUBSTRING "${rest}" 0 ${close} block)
  file(READ "${ROOT}/${path}" source)
  if(NOT block STREQUAL source)
    message(FATAL_ERROR "${PAGE}: its block of ${path} differs from the file; copy the file "
      "into the page (the file is what the test builds and runs)")
  endif()
  message(STATUS "${PAGE}: ${path} as it is")
endforeach()
