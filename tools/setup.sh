#!/usr/bin/env bash
# Installs everything tgc needs on a fresh Debian 12 machine; safe to run again (idempotent).
#
#   tools/setup.sh            Debian packages + project venv (.venv) with torch==2.11.0
#                             (and timm, transformers for the model zoo)
#
# Environment:
#   TGC_VENV   where the Python virtual environment lives (default: <repo>/.venv)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${TGC_VENV:-$repo/.venv}
torch_version=2.11.0
torchvision_version=0.26.0
# The model zoo's other sources (tests/zoo/make_zoo.py): timm and Hugging Face transformers.
timm_version=1.0.31
transformers_version=5.25.0

apt_packages=(
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools
  libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  ninja-build ccache cmake g++ pkg-config python3-venv
  nlohmann-json3-dev libxxhash-dev libzstd-dev libcli11-dev libboost-context-dev
  zlib1g-dev libsodium-dev
)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating virtual environment $venv"
  "$python" -m venv "$venv"
fi
have=$("$venv/bin/python" -c 'import torch, torchvision; print(torch.__version__.split("+")[0], torchvision.__version__.split("+")[0])' 2>/dev/null || true)
if [ "$have" != "$torch_version $torchvision_version" ]; then
  echo "setup: installing torch==$torch_version torchvision==$torchvision_version into $venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q "torch==$torch_version" "torchvision==$torchvision_version" numpy
fi
have=$("$venv/bin/python" -c 'import timm, transformers; print(timm.__version__, transformers.__version__)' 2>/dev/null || true)
if [ "$have" != "$timm_version $transformers_version" ]; then
  echo "setup: installing timm==$timm_version transformers==$transformers_version into $venv"
  # torch stays the pinned one: pip must not replace it to satisfy these.
  "$venv/bin/python" -m pip install -q "timm==$timm_version" "transformers==$transformers_version" \
    "torch==$torch_version" "torchvision==$torchvision_version"
fi
echo "setup: done (venv: $venv)"
