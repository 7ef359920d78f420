# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# scripts/ceph-lib.sh: what scripts/ceph-up, ceph-down and ceph-osd share.
# Sourced, never run. It knows a cluster directory's layout, starts a daemon
# and records its pid, stops exactly the recorded daemons, and probes
# whether the pool takes writes.
#
# A cluster directory DIR holds every file of one throwaway cluster:
#   DIR/ceph.conf          the daemons' and the clients' configuration
#   DIR/cluster            what ceph-up was asked for (NAME=VALUE lines:
#                          port, osds, pool, size, pg), for the other scripts
#   DIR/monmap             the first monitor map
#   DIR/mon/a              the monitor's store
#   DIR/osd/N              OSD N's data directory
#   DIR/osd/blockN         OSD N's BlueStore device, a sparse file (outside
#                          osd/N: BlueStore links osd/N/block to it)
#   DIR/pids/NAME.pid      the pid of each daemon started (mon.a, osd.N)
#   DIR/log/NAME.log       each daemon's log; NAME.out, what it wrote on
#                          stdout and stderr; scripts.log, what the ceph
#                          and rados commands of the scripts printed
#   DIR/run, DIR/crash     admin sockets, crash reports
#
# A recorded pid is taken for the daemon only while the process holds
# DIR/ceph.conf on its command line (every daemon is started with
# `-c DIR/ceph.conf`): a daemon that died and whose pid went to another
# process is never signalled.

CEPH_PROG=${CEPH_PROG:-ceph}
# The daemons get this long to stop after SIGTERM before SIGKILL.
CEPH_STOP_SECONDS=${CEPH_STOP_SECONDS:-20}

say() { echo "$CEPH_PROG: $*" >&2; }
die() { echo "$CEPH_PROG: error: $*" >&2; exit 1; }

# ceph_dir DIR: set D (DIR made absolute, without making it), CONF, PIDS, LOGS.
ceph_dir() {
    case $1 in
        /*) D=$1 ;;
        *) D=$PWD/$1 ;;
    esac
    while [ "$D" != / ] && [ "${D%/}" != "$D" ]; do D=${D%/}; done
    CONF=$D/ceph.conf
    PIDS=$D/pids
    LOGS=$D/log
}

# ceph_setting NAME: the value ceph-up recorded in DIR/cluster ("" if none).
ceph_setting() {
    [ -f "$D/cluster" ] || return 0
    sed -n "s/^$1=//p" "$D/cluster" | tail -n 1
}

# ceph_need PROGRAM...: each is on PATH, or die saying how to install it.
ceph_need() {
    local p
    for p in "$@"; do
        command -v "$p" >/dev/null 2>&1 ||
            die "$p not found: run scripts/install-deps --test (it installs ceph-mon, ceph-osd and ceph-common)"
    done
}

# ceph_pid NAME: print the pid of daemon NAME and return 0 when it is
# running: its pid file names a live process (ceph_gone says no) whose
# command line holds $CONF. Return 1 otherwise.
ceph_pid() {
    local pid cmd
    [ -f "$PIDS/$1.pid" ] || return 1
    read -r pid <"$PIDS/$1.pid" 2>/dev/null || return 1
    case $pid in '' | *[!0-9]*) return 1 ;; esac
    ceph_gone "$pid" && return 1
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
    case " $cmd" in *" $CONF "*) ;; *) return 1 ;; esac
    echo "$pid"
}

# ceph_names [osd|mon]: the names of the daemons with a pid file (of that
# kind only, when given), the OSDs first.
ceph_names() {
    local kind f n
    [ -d "$PIDS" ] || return 0
    for kind in osd mon; do
        [ $# -eq 0 ] || [ "$1" = $kind ] || continue
        for f in "$PIDS/$kind".*.pid; do
            [ -f "$f" ] || continue
            n=${f##*/}
            echo "${n%.pid}"
        done
    done
}

# ceph_stop_all: stop every recorded daemon, the OSDs first: an OSD told to
# stop tells the monitor it is going down and waits up to 5 s for its
# answer, so the monitor must outlive it. Returns as ceph_stop.
ceph_stop_all() {
    local rc=0
    # shellcheck disable=SC2046
    ceph_stop $(ceph_names osd) || rc=1
    # shellcheck disable=SC2046
    ceph_stop $(ceph_names mon) || rc=1
    return $rc
}

# ceph_start_daemon NAME PROGRAM ARGS...: start PROGRAM -c $CONF ARGS -f in
# the background and record its pid in $PIDS/NAME.pid.
#
# Why in the foreground (-f) with &, and $!, rather than letting the daemon
# daemonize and write its pid_file: a daemonizing Ceph daemon forks and
# calls setsid(), leaving the caller's session, so tests/run-tests' check
# for processes a test leaves in its session would not see a cluster left
# running. Started with -f it stays in the caller's session (and process
# group), the pid is known the moment it starts (no wait for a file the
# daemon writes once it is up), and that pid is the daemon itself: bash
# execs a simple background command in the child it forks. Its stdin is
# /dev/null and its stdout and stderr a file, so it holds no pipe of the
# caller's open (a test reading ceph-up's output until EOF would hang), and
# fd 9, ceph-up's port lock, is closed in it.
ceph_start_daemon() {
    local name=$1 prog=$2
    shift 2
    "$prog" -c "$CONF" "$@" -f </dev/null >>"$LOGS/$name.out" 2>&1 9>&- &
    echo $! >"$PIDS/$name.pid.tmp" && mv "$PIDS/$name.pid.tmp" "$PIDS/$name.pid" ||
        die "cannot write $PIDS/$name.pid"
}

# ceph_gone PID: 0 when PID no longer runs: no such process, or a zombie
# none of whose threads runs. (A daemon's main thread may exit before its
# other threads, which go on holding its files and ports for a while.)
ceph_gone() {
    local t st
    for t in /proc/"$1"/task/*/stat; do
        read -r st 2>/dev/null <"$t" || continue
        st=${st##*) }
        case ${st%% *} in Z | X) ;; *) return 1 ;; esac
    done
    return 0
}

# ceph_stop NAME...: stop those daemons: SIGTERM, up to $CEPH_STOP_SECONDS
# for all of them to exit, then SIGKILL for the rest. Says what it did on
# stderr; removes their pid files. Returns 1 when one would not die even
# after SIGKILL (5 s), 0 otherwise.
ceph_stop() {
    local name pid i rc=0 names=() pids=() left
    for name in "$@"; do
        if pid=$(ceph_pid "$name"); then
            kill -TERM "$pid" 2>/dev/null
            names+=("$name")
            pids+=("$pid")
        elif [ -f "$PIDS/$name.pid" ]; then
            say "$name was not running (stale $PIDS/$name.pid removed)"
            rm -f "$PIDS/$name.pid"
        fi
    done
    [ ${#pids[@]} -gt 0 ] || return 0
    for ((i = 0; i < CEPH_STOP_SECONDS * 10; i++)); do
        left=0
        for pid in "${pids[@]}"; do ceph_gone "$pid" || left=1; done
        [ $left = 0 ] && break
        sleep 0.1
    done
    for i in "${!pids[@]}"; do
        if ! ceph_gone "${pids[$i]}"; then
            say "${names[$i]} (pid ${pids[$i]}) still running $CEPH_STOP_SECONDS s after SIGTERM: SIGKILL"
            kill -KILL "${pids[$i]}" 2>/dev/null
        fi
    done
    for i in "${!pids[@]}"; do
        for ((left = 0; left < 50; left++)); do
            ceph_gone "${pids[$i]}" && break
            sleep 0.1
        done
        if ceph_gone "${pids[$i]}"; then
            say "stopped ${names[$i]} (pid ${pids[$i]})"
            rm -f "$PIDS/${names[$i]}.pid"
        else
            say "${names[$i]} (pid ${pids[$i]}) is still running after SIGKILL"
            rc=1
        fi
    done
    return $rc
}

# ceph_tail NAME...: the last lines of each daemon's log and output, on
# stderr, for a failure's report.
ceph_tail() {
    local name f
    for name in "$@"; do
        for f in "$LOGS/$name.out" "$LOGS/$name.log"; do
            [ -s "$f" ] || continue
            echo "---- the last lines of $f" >&2
            grep -v '^$' "$f" | tail -n 12 >&2
        done
    done
}

# ceph_cmd ARGS...: the ceph command line tool on this cluster, its output
# appended to $LOGS/scripts.log (and its stdout printed); at most 60 s.
ceph_cmd() {
    local out rc
    echo "+ ceph $*" >>"$LOGS/scripts.log"
    out=$(timeout -k 5 60 ceph -c "$CONF" --connect-timeout 30 "$@" 2>>"$LOGS/scripts.log")
    rc=$?
    printf '%s\n' "$out" | tee -a "$LOGS/scripts.log"
    return $rc
}

# ceph_osd_active N: 0 when OSD N answers on its admin socket that it is
# active (booted, in the map as up): the running process, not a former
# one the map may still show up.
ceph_osd_active() {
    timeout -k 2 10 ceph --admin-daemon "$D/run/osd.$1.asok" status 2>/dev/null |
        grep -q '"state": "active"'
}

# ceph_probe POOL: one object written, read back and removed, and the pool
# listed (a listing visits every placement group, so it fails while any
# of them cannot serve). 0 when all of it worked within 5 s an operation.
ceph_probe() {
    local obj="probe.$$.$RANDOM" data="probe $$ $EPOCHREALTIME" got
    local r=(timeout -k 2 15 rados -c "$CONF" -p "$1" --client_mount_timeout 5
             --rados_mon_op_timeout 5 --rados_osd_op_timeout 5)
    printf '%s' "$data" | "${r[@]}" put "$obj" - 2>>"$LOGS/probe.log" || return 1
    got=$("${r[@]}" get "$obj" - 2>>"$LOGS/probe.log") || return 1
    [ "$got" = "$data" ] || { echo "probe: read back '$got', wrote '$data'" >>"$LOGS/probe.log"; return 1; }
    "${r[@]}" ls >/dev/null 2>>"$LOGS/probe.log" || return 1
    "${r[@]}" rm "$obj" 2>>"$LOGS/probe.log"
}

# ceph_wait_writable POOL SECONDS NAME...: poll every 0.5 s until the
# daemons NAME... run, each OSD among them is active, and ceph_probe POOL
# passes. 0 then; 1 after SECONDS, or as soon as one of the daemons has
# exited, saying which (and printing its log's tail).
ceph_wait_writable() {
    local pool=$1 limit=$2 name ok end
    shift 2
    end=$((SECONDS + limit))
    while :; do
        ok=1
        for name in "$@"; do
            if ! ceph_pid "$name" >/dev/null; then
                say "$name exited while the cluster was starting"
                ceph_tail "$name"
                return 1
            fi
            case $name in osd.*) ceph_osd_active "${name#osd.}" || ok=0 ;; esac
        done
        if [ $ok = 1 ] && ceph_probe "$pool"; then return 0; fi
        if [ $SECONDS -ge $end ]; then
            say "pool $pool not writable after $limit s (the probe's errors: $LOGS/probe.log)"
            [ -s "$LOGS/probe.log" ] && tail -n 5 "$LOGS/probe.log" >&2
            ceph_tail "$@"
            return 1
        fi
        sleep 0.5
    done
}
