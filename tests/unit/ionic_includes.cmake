# ionic-includes-unit: the device model (src/ionic) includes no backend header. The backends and
# their glue to the device live in src/fabric, src/nvmeof and src/s3, and reach the device only
# through the ops interfaces of src/ionic/ionic_dev.h; an #include of one of their headers from
# src/ionic fails this test with the file, the line and the include.
#
# Run as: cmake -DSRC_DIR=<source tree>/src -P ionic_includes.cmake
if(NOT DEFINED SRC_DIR)
  message(FATAL_ERROR "SRC_DIR is not set")
endif()
set(forbidden fabric nvmeof s3)

file(GLOB files "${SRC_DIR}/ionic/*.c" "${SRC_DIR}/ionic/*.h")
if(NOT files)
  message(FATAL_ERROR "no sources found under ${SRC_DIR}/ionic")
endif()

set(bad 0)
foreach(f IN LISTS files)
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS lines)
    foreach(dir IN LISTS forbidden)
      # "dir/x.h", <dir/x.h>, "../dir/x.h"
      if(line MATCHES "[\"</]${dir}/")
        file(RELATIVE_PATH rel "${SRC_DIR}/.." "${f}")
        message(SEND_ERROR "${rel}: ${line} (src/${dir} is a backend: src/ionic must not include it)")
        math(EXPR bad "${bad} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()

list(LENGTH files n)
if(bad GREATER 0)
  message(FATAL_ERROR "${bad} backend include(s) in src/ionic")
endif()
message(STATUS "${n} files in src/ionic, no backend include")
