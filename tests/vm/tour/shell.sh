#!/bin/sh
# Before the demo's guest console (scripts/demo.sh --shell): brings the ionic NIC up as
# 192.168.200.2, configures aws-cli and s3cmd for the s3 backend, and prints what to try.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"
# shellcheck source=SCRIPTDIR/setup.sh
. "$(dirname "$0")/setup.sh"

modprobe rdma_ucm 2>/dev/null
modprobe nvme-rdma 2>/dev/null
if ! tour_net; then
	echo "ERNIC-DEMO: the ionic NIC did not come up: $WHY"
	exit 0
fi
s3_clients_config
cat <<EOT

  rocm-ernic demo guest: $(link_summary)
  backend: ${ERNIC_DEMO_BACKEND:-?}; the server is at $PEER_IP. Things to try:
EOT
case ${ERNIC_DEMO_BACKEND:-} in
s3) cat <<EOT
    aws s3 ls                      aws s3 cp /etc/os-release s3://$S3_BUCKET/
    s3cmd ls s3://$S3_BUCKET           curl $S3_URL/$S3_BUCKET
    s3_rdma_client -d $IB -s 1M -n 8        (S3 by RDMA: PUT and GET by token)
EOT
	;;
nvmeof) cat <<EOT
    nvme discover -t rdma -a $PEER_IP
    nvme connect -t rdma -a $PEER_IP -n nvmet-test && lsblk
    nvme disconnect -n nvmet-test
EOT
	;;
loopback) cat <<EOF2
    ibv_devinfo -d $IB
    ibv_rc_pingpong -d $IB -g $GID & sleep 1; ibv_rc_pingpong -d $IB -g $GID 127.0.0.1
    ib_write_bw -d $IB -x $GID & sleep 1; ib_write_bw -d $IB -x $GID 127.0.0.1
EOF2
	;;
esac
echo "  Ctrl-A X leaves the guest (the server then stops)."
echo
