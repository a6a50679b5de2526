# Builds the dashboard (web/) into OUT_DIR with npm and Vite, then embeds it (embed_ui.cmake):
# its API types generated from src/api/openapi.json first (web/generated/api.ts).
# npm ci runs only when web/package-lock.json changed since the last install.
#   cmake -DUI_DIR=web -DOUT_DIR=build/ui-dist -DNPM=/usr/bin/npm -DOUTPUT=... -P cmake/build_ui.cmake
cmake_minimum_required(VERSION 3.25)

set(stamp "${UI_DIR}/node_modules/.package-lock.json")
if(NOT EXISTS "${stamp}" OR "${UI_DIR}/package-lock.json" IS_NEWER_THAN "${stamp}")
  execute_process(COMMAND "${NPM}" ci --no-audit --no-fund --loglevel=error
                  WORKING_DIRECTORY "${UI_DIR}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the dashboard: `npm ci` in ${UI_DIR} failed (is the npm registry reachable? "
                        "configure with -DBATON_UI=OFF to build baton without the dashboard)")
  endif()
endif()
# The API's types, from the server's own OpenAPI document (web/src/types.ts names them).
execute_process(COMMAND "${UI_DIR}/node_modules/.bin/openapi-typescript" ../src/api/openapi.json
                        -o generated/api.ts --silent
                WORKING_DIRECTORY "${UI_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the dashboard: openapi-typescript could not read src/api/openapi.json (above)")
endif()
execute_process(COMMAND "${UI_DIR}/node_modules/.bin/tsc" --noEmit -p "${UI_DIR}"
                WORKING_DIRECTORY "${UI_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the dashboard: TypeScript errors in ${UI_DIR}/src (above)")
endif()
execute_process(COMMAND "${UI_DIR}/node_modules/.bin/vite" build --logLevel warn --outDir "${OUT_DIR}"
                        --emptyOutDir
                WORKING_DIRECTORY "${UI_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the dashboard: vite build failed (above)")
endif()
set(DIST "${OUT_DIR}")
include("${CMAKE_CURRENT_LIST_DIR}/embed_ui.cmake")
