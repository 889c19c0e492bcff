# shellcheck shell=sh
# Shared by the demo's guest tours (scripts/demo.sh) and its --shell preparation: the guest side
# of the emulated segment and the S3 clients' configuration. The runner copies this file into
# the job directory (--file); the scripts source it after check-lib.sh.
#   guest 192.168.200.2/24 on the ionic netdev; the server's endpoint or controller at .1

GUEST_IP=192.168.200.2
PEER_IP=192.168.200.1
S3_URL=http://$PEER_IP:9000
S3_BUCKET=ernic

# tour_net: the ionic netdev (IF) up with GUEST_IP and its RDMA device (IB, GID index GID)
# active; non-zero with WHY otherwise.
tour_net() {
	ionic_up $GUEST_IP/24 && rdma_up $GUEST_IP
}

# link_summary: the netdev, its driver and PCI ID, address and RDMA device, for a step's figure.
link_summary() {
	echo "$IF ($(ethtool -i "$IF" | sed -n 's/^driver: //p'), PCI $(cut -c3- "/sys/class/net/$IF/device/vendor"):$(cut -c3- "/sys/class/net/$IF/device/device")) up at $GUEST_IP/24, RDMA device $IB"
}

# s3_clients_config: aws-cli and s3cmd pointed at the endpoint, path-style (the store serves one
# bucket under the endpoint's address); the endpoint takes any credentials.
s3_clients_config() {
	mkdir -p "$HOME/.aws"
	cat >"$HOME/.aws/config" <<-EOT
		[default]
		region = us-east-1
		endpoint_url = $S3_URL
		s3 =
		    addressing_style = path
	EOT
	cat >"$HOME/.aws/credentials" <<-EOT
		[default]
		aws_access_key_id = ernic
		aws_secret_access_key = ernic-demo
	EOT
	cat >"$HOME/.s3cfg" <<-EOT
		[default]
		access_key = ernic
		secret_key = ernic-demo
		host_base = $PEER_IP:9000
		host_bucket = $PEER_IP:9000
		use_https = False
	EOT
}

# secs_since T0: seconds (two decimals) since T0, a value of now_s.
now_s() { cut -d' ' -f1 /proc/uptime; }
secs_since() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.2f", b - a }'; }
