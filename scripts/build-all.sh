#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Every build step, each incremental: the toolchain root, the patched tree,
# the kernel, the iommu-pt module and the guest programs.

. "$(dirname "$0")/lib.sh"

need_root
"$REPO/scripts/setup-root.sh"
"$REPO/scripts/prepare-tree.sh"
"$REPO/scripts/build-kernel.sh"
"$REPO/scripts/build-module.sh"
"$REPO/scripts/build-guest-tools.sh"
