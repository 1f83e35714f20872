# Included right after llama.cpp's own project() call when llama-cpp-python is built by the Makefile
# (CMAKE_PROJECT_llama.cpp_INCLUDE). llama-cpp-python 0.3.x forces LLAMA_BUILD_COMMON on in the cache,
# although its Python package loads only libllama and libggml*: the common library (argument parsing,
# chat parsers, the JSON and Jinja engines, downloads, cpp-httplib) is more than a third of the build
# and is never installed. A normal variable here shadows that cache entry for llama.cpp's directory.
set(LLAMA_BUILD_COMMON OFF)
