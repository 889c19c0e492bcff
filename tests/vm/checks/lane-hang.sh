#!/bin/sh
# A check that never finishes: for verifying by hand that the runner kills a hung guest, e.g.
#   tests/vm/run-vm-test.sh --no-device --check tests/vm/checks/lane-hang.sh --timeout 60
# must end after about a minute with "not ok", and leave no QEMU behind.
echo "hanging on purpose"
while :; do sleep 60; done
