#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the guest of the KUnit boot, after the built-in suites ran:
# the IOMMU checks, then the iommu-pt module's tests.
#
# usage: stage1.sh MODULE.ko GUEST_BIN_DIR

here=$(dirname "$0")
status=0
"$here/check-iommu.sh" || status=1
"$here/test-pool.sh" "$@" || status=1
exit $status
