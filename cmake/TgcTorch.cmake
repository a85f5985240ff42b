# Finds LibTorch (from the project's venv) and defines tgc::torch for tgc's LibTorch-side targets.
find_package(Torch REQUIRED CONFIG)
add_library(tgc_torch_deps INTERFACE)
target_link_libraries(tgc_torch_deps INTERFACE ${TORCH_LIBRARIES})
target_include_directories(tgc_torch_deps SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
get_filename_component(TGC_TORCH_LIB_DIR "${TORCH_INSTALL_PREFIX}/lib" ABSOLUTE)
