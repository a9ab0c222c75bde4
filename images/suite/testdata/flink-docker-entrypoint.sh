#!/usr/bin/env bash
# Stand-in for the docker-entrypoint.sh of Flink's official images, written
# for StreamFusion's image suite (not a copy of Flink's). It behaves as that
# script does for each role:
#   jobmanager | standalone-job | taskmanager | history-server ARGS...
#       write the container settings into Flink's config file, then exec
#       Flink's start script in the foreground (`bin/jobmanager.sh
#       start-foreground ARGS...` and so on), so the JVM becomes PID 1;
#   bash|sh -c "kubernetes-jobmanager.sh ..." (native Kubernetes)
#       exec the command as given;
#   help  print the roles;
#   anything else: exec it as given.
# An image that starts as root (the 1.18 line) drops to the flink user with
# gosu before Flink starts; an image with USER flink (2.2) runs as it is.
# Settings: JOB_MANAGER_RPC_ADDRESS (default localhost, so a TaskManager
# sharing the JobManager's network namespace registers on loopback),
# TASK_MANAGER_NUMBER_OF_TASK_SLOTS, FLINK_PROPERTIES ("key: value" lines).
set -euo pipefail

FLINK_HOME=${FLINK_HOME:-/opt/flink}
conf_dir=$FLINK_HOME/conf

# run_flink CMD...: exec CMD as the flink user.
run_flink() {
	if [ "$(id -u)" = 0 ]; then
		exec gosu flink "$@"
	fi
	exec "$@"
}

# settings: "key=value" lines of what this container sets.
settings() {
	local addr=${JOB_MANAGER_RPC_ADDRESS:-localhost}
	printf '%s\n' "jobmanager.rpc.address=$addr" "rest.address=$addr" \
		"jobmanager.bind-host=0.0.0.0" "taskmanager.bind-host=0.0.0.0" "rest.bind-address=0.0.0.0" \
		"blob.server.port=6124" "query.server.port=6125"
	if [ -n "${TASK_MANAGER_NUMBER_OF_TASK_SLOTS:-}" ]; then
		echo "taskmanager.numberOfTaskSlots=$TASK_MANAGER_NUMBER_OF_TASK_SLOTS"
	fi
	local line
	while IFS= read -r line; do
		[[ $line =~ ^[[:space:]]*([^:#[:space:]][^:]*):[[:space:]]*(.*)$ ]] || continue
		echo "${BASH_REMATCH[1]}=${BASH_REMATCH[2]}"
	done <<<"${FLINK_PROPERTIES:-}"
}

# configure writes the settings into the config file the line reads.
configure() {
	local kv key value
	if [ -f "$conf_dir/config.yaml" ]; then
		# Flink 2.x: standard (nested) YAML. Flink's own config-parser-utils.sh
		# merges the settings through BashJavaUtils, a JVM run before Flink's.
		local -a dyn=()
		while IFS= read -r kv; do dyn+=(-D "$kv"); done < <(settings)
		"$FLINK_HOME/bin/config-parser-utils.sh" "$conf_dir" "$FLINK_HOME/bin" "$FLINK_HOME/lib" "${dyn[@]}" >/dev/null
		return
	fi
	# Flink 1.x: flat flink-conf.yaml; a key set again replaces its line.
	# Written in place, so the file keeps its owner.
	local file=$conf_dir/flink-conf.yaml kept
	while IFS= read -r kv; do
		key=${kv%%=*} value=${kv#*=}
		kept=$(grep -v -E "^[[:space:]]*${key//./\\.}[[:space:]]*:" "$file" || true)
		printf '%s\n%s: %s\n' "$kept" "$key" "$value" >"$file"
	done < <(settings)
}

case "${1:-help}" in
help | --help | -h)
	echo "usage: $0 jobmanager|standalone-job|taskmanager|history-server [args...], or a command to run"
	exit 0
	;;
jobmanager)
	shift
	echo "stand-in entrypoint: starting jobmanager"
	configure
	run_flink "$FLINK_HOME/bin/jobmanager.sh" start-foreground "$@"
	;;
standalone-job)
	shift
	echo "stand-in entrypoint: starting standalone-job"
	configure
	run_flink "$FLINK_HOME/bin/standalone-job.sh" start-foreground "$@"
	;;
taskmanager)
	shift
	echo "stand-in entrypoint: starting taskmanager"
	configure
	run_flink "$FLINK_HOME/bin/taskmanager.sh" start-foreground "$@"
	;;
history-server)
	shift
	echo "stand-in entrypoint: starting history-server"
	configure
	run_flink "$FLINK_HOME/bin/historyserver.sh" start-foreground "$@"
	;;
bash | sh)
	if [ "${2:-}" = -c ] && [[ ${3:-} == *kubernetes-jobmanager.sh* || ${3:-} == *kubernetes-taskmanager.sh* ]]; then
		echo "stand-in entrypoint: native Kubernetes"
		run_flink "$@"
	fi
	exec "$@"
	;;
*)
	exec "$@"
	;;
esac
