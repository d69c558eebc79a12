#!/usr/bin/env bash
# End-to-end: job_submit.lua at allocation time for `sbatch --gpu-topo=island,<layout>` (issue 22).
# With topology/tree (the run's cluster) a layout job still asks for --switches. With
# topology/block (a cluster of this script's own: b1=n[1-2], b2=n[3-4], BlockSizes=2,4, see
# harness.sh GPUTOPO_CLUSTER_TOPOLOGY=block) it asks for --segment=S, S a multiple of the nodes
# one TP*CP*EP group needs, at most a block, dividing -N: read back from Slurm (SegmentSize=
# on 26.05, the nodes the job got, the islands the plugin's tasks see) and from slurmctld's
# log. What each release does (found on real daemons):
#   22.05        no topology/block: the block cases are skipped (ok, "# SKIP"), after
#                checking that the release really has no topology_block.so.
#   23.11-25.11  topology/block and --segment exist, but job_submit/lua has no segment_size
#                field: the Lua sets nothing and its log line names the --segment to give.
#   26.05+       the Lua sets it: `scontrol show job` shows SegmentSize=S.
# Refusals (a TP*CP*EP group larger than a block, -N not a multiple of a group's nodes, no -N)
# are one log line each, and the job runs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 9
cluster_ensure "${1:-build}" || { echo "not ok - segment: cluster"; exit 1; }

running=$(sbatch --version | awk '{print $2}')  # "24.11.5"
at_least() { [ "$(printf '%s\n%s\n' "$running" "$1" | sort -V | head -n 1)" = "$1" ]; }
out=$CLUSTER_DIR/tmp/segment.$$
mkdir -p "$CLUSTER_DIR/tmp"

# submit ARGS...: a batch job; its id in $job ("" on failure, the error in $out.err).
submit() {
    job=$(with_timeout 60 sbatch --parsable "$@" 2>"$out.err") || job=""
    job=${job%%;*}
}
# lua_logged TEXT: slurmctld's log has the Lua's line TEXT (fixed string).
lua_logged() { grep -qF -- "$1" "$CLUSTER_DIR/log/slurmctld.log"; }
lua_lines() { grep -F 'gputopo: job from uid' "$CLUSTER_DIR/log/slurmctld.log" | tail -n 3; }

# 1. topology/tree: a layout job asks for --switches as a plain island job does.
name="segment: topology/tree: --gpu-topo=island,tp=4,pp=2 -N2 asks for --switches=1@60, no segment (Slurm $running)"
if [ "${CLUSTER_TOPOLOGY:-tree}" != tree ]; then
    tap_not_ok "$name" "the run's cluster is topology/$CLUSTER_TOPOLOGY; this case needs topology/tree"
else
    submit --hold -N2 --ntasks-per-node=2 --gpu-topo=island,tp=4,pp=2 --wrap true
    sw=$([ -n "$job" ] && job_field "$job" Switches)
    seg=$([ -n "$job" ] && job_field "$job" SegmentSize)
    if [ -n "$job" ] && [ "$sw" = "1@00:01:00" ] && [ -z "$seg" ] &&
       lua_logged "--gpu-topo=island,tp=4,pp=2 -> --switches=1@60"; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "job '$job' Switches='$sw' SegmentSize='$seg' $(cat "$out.err")" "$(lua_lines)"
    fi
    [ -n "$job" ] && scancel "$job" 2>/dev/null
fi

block_names=(
    "segment: -N4 --ntasks-per-node=2 tp=4,pp=2: --segment=2 (a TP group is 2 nodes, a block 2), the job runs"
    "segment: with n1 drained a 2-node tp=2 job gets one whole block (n[3-4]); its tasks see island b2"
    "segment: tp=8 needs 4 nodes, more than a block's 2: no --segment, one log line, the job runs"
    "segment: -N3 with tp=4 (2 nodes a group): not a multiple, no --segment, one log line, the job runs"
    "segment: no -N: no --segment (a segment must divide the node count), one log line, the job runs"
    "segment: the user's own --segment=1 is kept"
    "segment: a --segment larger than the base block (4 > 2), why the Lua stops at the base block"
)
plugin_dir=$(scontrol show config 2>/dev/null | sed -n 's/^PluginDir *= *//p')
if ! at_least 23.11; then
    name="segment: Slurm $running has no topology/block (23.11+): no topology_block.so in $plugin_dir"
    if [ -n "$plugin_dir" ] && [ -d "$plugin_dir" ] && [ ! -e "$plugin_dir/topology_block.so" ]; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "PluginDir '$plugin_dir': $(ls "$plugin_dir"/topology_* 2>&1)"
    fi
    for n in "${block_names[@]}"; do tap_ok "$n # SKIP Slurm $running has no topology/block (23.11+)"; done
    rm -f "$out" "$out".*
    exit 0
fi

# 2. topology/block, on a cluster of this script's own (stopped when the subshell ends).
(
    unset CLUSTER_DIR
    export GPUTOPO_CLUSTER_TOPOLOGY=block
    if ! cluster_start "$CLUSTER_BUILD" > "$out.start" 2>&1; then
        tap_not_ok "segment: a topology/block cluster starts on Slurm $running" "$(tail -n 20 "$out.start")"
        for n in "${block_names[@]}"; do tap_not_ok "$n" "no block cluster"; done
        exit 1
    fi
    plugin=$(scontrol show config | sed -n 's/^TopologyPlugin *= *//p')
    name="segment: slurmctld runs $plugin (b1=n[1-2], b2=n[3-4], BlockSizes=2,4) on Slurm $running"
    if [ "$plugin" = topology/block ]; then tap_ok "$name"; else tap_not_ok "$name" "TopologyPlugin '$plugin'"; fi
    sets=0
    at_least 26.05 && sets=1
    # lua_says VALUE SEGMENT: the Lua's line for a job it chose SEGMENT for, on this release.
    lua_says() {
        if [ "$sets" = 1 ]; then
            lua_logged "--gpu-topo=$1 -> --segment=$2 (blocks of 2 nodes)"
        else
            lua_logged "--gpu-topo=$1: this Slurm's job_submit/lua cannot set --segment (26.05+): submit with --segment=$2 (blocks of 2 nodes)"
        fi
    }
    # segment_is S: the job's SegmentSize as this release shows it (26.05: the field, absent for
    # none, S ""; before: no such field, and no "unrecognized field" error from a Lua that set it).
    segment_is() {
        local got
        got=$(job_field "$job" SegmentSize)
        if [ "$sets" = 1 ]; then
            [ "$got" = "$1" ]
        else
            [ -z "$got" ] && ! grep -q 'unrecognized field: segment_size' "$CLUSTER_DIR/log/slurmctld.log"
        fi
    }
    # finished: the job completed (bounded).
    finished() { [ -n "$job" ] && wait_job_state "$job" COMPLETED 60 2>>"$out.err"; }
    why() { echo "job '$job' $(scontrol show job -o "$job" 2>&1 | grep -o ' \(JobState\|Reason\|NodeList\|SegmentSize\)=[^ ]*' | tr -d '\n') $(cat "$out.err")"; lua_lines; }

    name=${block_names[0]}
    submit -N4 --ntasks-per-node=2 --gpu-topo=island,tp=4,pp=2 --wrap true
    if finished && lua_says "island,tp=4,pp=2" 2 && segment_is 2; then tap_ok "$name"; else tap_not_ok "$name" "$(why)"; fi

    name=${block_names[1]}
    scontrol update NodeName=n1 State=DRAIN Reason=t_segment
    submit -N2 --ntasks-per-node=2 --gpus-per-node=1 --gpu-topo=island,tp=2 -o "$out.isl" \
        --wrap "srun --gpu-topo=island bash -c 'echo ISL \$SLURMD_NODENAME \${GPUTOPO_ISLAND:-unset}'"
    if finished && [ "$(job_field "$job" NodeList)" = "n[3-4]" ] && lua_says "island,tp=2" 2 && segment_is 2 &&
       [ "$(grep '^ISL' "$out.isl" | sort -u | tr '\n' ' ')" = "ISL n3 b2 ISL n4 b2 " ]; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "$(why)" "$(cat "$out.isl" 2>&1 | head -n 6)"
    fi
    scontrol update NodeName=n1 State=RESUME

    name=${block_names[2]}
    submit -N2 --ntasks-per-node=2 --gpu-topo=island,tp=8 --wrap true
    if finished && lua_logged "--gpu-topo=island,tp=8: no --segment (tp*cp*ep = 8 GPUs need 4 nodes, more than a block's 2)" &&
       segment_is ""; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "$(why)"
    fi

    name=${block_names[3]}
    submit -N3 --ntasks-per-node=2 --gpu-topo=island,tp=4,cp=1 --wrap true
    if finished && segment_is "" &&
       lua_logged "--gpu-topo=island,tp=4,cp=1: no --segment (the job's 3 nodes are not a multiple of the 2 nodes one TP*CP*EP block needs)"; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "$(why)"
    fi

    name=${block_names[4]}
    submit -n2 --gpu-topo=island,tp=2,pp=1 --wrap true
    if finished && segment_is "" &&
       lua_logged "--gpu-topo=island,tp=2,pp=1: no --segment (the job gives no node count (-N), which a segment size must divide)"; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "$(why)"
    fi

    # 26.05: the Lua reads the user's value and keeps it. Before: it cannot read it; the user's
    # --segment reaches Slurm untouched (the job runs on one block per segment).
    name="${block_names[5]} (Slurm $running)"
    submit -N2 --ntasks-per-node=2 --segment=1 --gpu-topo=island,tp=2,dp=2 --wrap true
    if [ "$sets" = 1 ]; then
        finished && segment_is 1 && lua_logged "--gpu-topo=island,tp=2,dp=2: keeps the user's --segment=1"
    else
        finished && segment_is 1
    fi
    if [ $? -eq 0 ]; then tap_ok "$name"; else tap_not_ok "$name" "$(why)"; fi

    # Slurm itself, no --gpu-topo: before 26.05 a segment larger than the base block is refused at
    # submission (eval_nodes_block: "segment (4) > bblock_node_cnt (2) is not supported");
    # 26.05 places it across the blocks of a higher level (BlockSizes=2,4: b1+b2).
    if [ "$sets" = 1 ]; then
        name="${block_names[6]}: Slurm $running runs it on a 4-node higher-level block"
        submit -N4 --ntasks-per-node=2 --segment=4 --wrap true
        finished && segment_is 4 && [ "$(job_field "$job" NodeList)" = "n[1-4]" ]
    else
        name="${block_names[6]}: Slurm $running refuses it at submission"
        submit -N4 --ntasks-per-node=2 --segment=4 --wrap true
        [ -z "$job" ] && grep -q 'Requested topology configuration is not available' "$out.err"
    fi
    if [ $? -eq 0 ]; then tap_ok "$name"; else tap_not_ok "$name" "$(why)" "$(grep -F 'bblock_node_cnt' "$CLUSTER_DIR/log/slurmctld.log")"; fi
    exit 0
)
rm -f "$out" "$out".*
exit 0
