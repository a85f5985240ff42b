# Finds LibTorch (from the project's venv). tgc's LibTorch-side targets link
# the imported `torch` target, which downstream users get through
# find_dependency(Torch) in tgcConfig.cmake.
find_package(Torch REQUIRED CONFIG)
get_filename_component(TGC_TORCH_LIB_DIR "${TORCH_INSTALL_PREFIX}/lib" ABSOLUTE)
add_library(tgc_torch_deps INTERFACE)
target_link_libraries(tgc_torch_deps INTERFACE torch)
