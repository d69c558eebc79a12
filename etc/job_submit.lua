--[[
gputopo job_submit.lua: `sbatch/salloc --gpu-topo=island[,flags]` asks for the job's
nodes under as few leaf switches as it fits in (`--switches=N@WAIT`, N = ceil(nodes /
nodes per leaf switch), below), so that tasks of one island share a switch. Requires TopologyPlugin=topology/tree (or another plugin that
knows switches) and JobSubmitPlugins=lua; put this file beside slurm.conf.

The option reaches job_submit as `_SLURM_SPANK_OPTION_gputopo_gpu_topo=island,...`
in job_desc.spank_job_env. A --switches the user gave is never changed.
--]]

--[[
Islands across nodes (gputopo issue 6): the job asks for AS FEW leaf switches as
it can fit in, not always one: switches = ceil(nodes / nodes per leaf switch),
where nodes per leaf switch is GPUTOPO_ISLAND_NODES or, when 0, the largest leaf
of the topology.conf beside this file (SwitchName=... Nodes=...). A job whose
node count is unknown at submission (no -N) asks for one switch. The wait is
bounded: after GPUTOPO_WAIT4SWITCH_SECONDS Slurm schedules the job anyway.

What Slurm 22.05 can and cannot express (man gputopo.conf(5) has the details):
  can:    --switches=N@WAIT (req_switch, wait4switch) with topology/tree: at most
          N leaf switches, waiting at most WAIT for such a placement;
          node features + a matching-OR constraint (--constraint="[rackA|rackB]")
          to keep a job inside one rack when racks are node features.
  cannot: topology/block (NVL72 racks as blocks, --segment) is Slurm 23.11+;
          a switch count cannot say WHICH islands, nor prefer fuller ones;
          no way to say "islands of gputopo.conf" except as node features.
  newer:  23.11 adds topology/block (BlockName=, BlockSizes=, --segment=N so a
          job is cut into segments that each stay in one block); 25.05+ adds
          topology.yaml with several topologies per cluster. job_submit/lua can
          set job_desc.segment_size only from 26.05 on (Slurm commit ae5a0d6d77):
          on 23.11-25.11 the field reads nil and setting it only logs
          "_set_job_field: unrecognized field: segment_size", so there this
          script names the --segment to type instead (below).
--]]

-- Nodes per leaf switch; 0: read the largest leaf from topology.conf beside this file.
GPUTOPO_ISLAND_NODES = 0

-- Nodes per planning base block with topology/block; 0: read topology.conf beside this file
-- (BlockSizes' first value, else the first BlockName line's node count, as Slurm's block
-- plugin takes it). Set it when the blocks live in topology.yaml (25.05+), which is not read.
GPUTOPO_BLOCK_NODES = 0

-- GPUs per node for --gpu-topo=island,<layout> with topology/block when the job
-- gives no --ntasks-per-node (one task per GPU); 4 on GB200 NVL72 trays.
GPUTOPO_GPUS_PER_NODE = 4

-- How long a job may wait for a one-switch placement before Slurm drops the constraint.
GPUTOPO_WAIT4SWITCH_SECONDS = 60

local OPTION = "_SLURM_SPANK_OPTION_gputopo_gpu_topo"
local NO_VAL = 4294967294
local NO_VAL16 = 65534

-- The --gpu-topo value, or nil.
local function gpu_topo_value(job_desc)
    local env = job_desc.spank_job_env
    if env == nil then return nil end
    for k, v in pairs(env) do
        if type(v) == "string" then
            local val = string.match(v, "^" .. OPTION .. "=(.*)$")
            if val ~= nil then return val end
        end
        if k == OPTION and type(v) == "string" then return v end
    end
    return nil
end

-- Number of hosts in a Slurm hostlist expression ("n[1-4,7],login1", "r[1-2]n[01-18]"), counted
-- from the bracket ranges (never expanded): one pass over the text, however many items it holds.
local function hostlist_count(expr)
    local total, pos, len = 0, 1, #expr
    while pos <= len do
        -- One item: up to the next comma outside brackets.
        local n, stop = 1, pos
        while stop <= len do
            local c = string.sub(expr, stop, stop)
            if c == "," then break end
            if c == "[" then
                local close = string.find(expr, "]", stop + 1, true)
                if close == nil then return total end  -- unclosed: what was counted so far
                local c2 = 0
                for part in string.gmatch(string.sub(expr, stop + 1, close - 1), "[^,]+") do
                    local lo, hi = string.match(part, "^(%d+)-(%d+)$")
                    if lo then c2 = c2 + math.max(0, tonumber(hi) - tonumber(lo) + 1) else c2 = c2 + 1 end
                end
                n = n * c2
                stop = close
            end
            stop = stop + 1
        end
        if stop > pos then total = total + n end
        pos = stop + 1
    end
    return total
end

-- topology.conf beside this file is read at most once per submission (job_submit runs under
-- slurmctld's job write lock), with the group sizes counted from it.
local topology_cache = { lines = nil, sizes = {} }

-- The lines of the topology.conf beside this file, comments removed (an empty list without one).
local function topology_lines()
    if topology_cache.lines ~= nil then return topology_cache.lines end
    local src = debug.getinfo(1, "S").source
    local dir = string.match(src, "^@(.*)/[^/]*$") or "."
    local lines = {}
    local f = io.open(dir .. "/topology.conf", "r")
    if f ~= nil then
        for line in f:lines() do lines[#lines + 1] = (string.gsub(line, "#.*", "")) end
        f:close()
    end
    topology_cache = { lines = lines, sizes = {} }
    return lines
end

-- The node counts of the groups named by lines starting with `key_pattern` (a Lua pattern of the
-- key and its '=') in the topology.conf beside this file, in file order.
local function group_sizes(key_pattern)
    local lines = topology_lines()
    local cached = topology_cache.sizes[key_pattern]
    if cached ~= nil then return cached end
    local sizes = {}
    for _, line in ipairs(lines) do
        if string.match(line, "^%s*" .. key_pattern) then
            local nodes = string.match(line, "[Nn][Oo][Dd][Ee][Ss]=(%S+)")
            if nodes then sizes[#sizes + 1] = hostlist_count(nodes) end
        end
    end
    topology_cache.sizes[key_pattern] = sizes
    return sizes
end

-- The largest group (nodes) named by lines starting with `key_pattern`, or nil.
local function largest_group(key_pattern)
    local best = nil
    for _, n in ipairs(group_sizes(key_pattern)) do
        if best == nil or n > best then best = n end
    end
    return best
end

-- The largest leaf switch (nodes) in the topology.conf beside this file, or nil.
local function largest_leaf() return largest_group("[Ss][Ww][Ii][Tt][Cc][Hh][Nn][Aa][Mm][Ee]=") end

--[[
A parallel layout (gputopo issue 22): `--gpu-topo=island,tp=8,pp=4[,cp=..,ep=..]`.
With topology/block (topology.conf beside this file has BlockName= lines, Slurm
23.11+), the job asks for --segment=S: S nodes per segment, each segment inside
one block, S a multiple of the nodes one TP*CP*EP block needs
(ceil(tp*cp*ep / GPUs per node)), at most the planning base block and dividing
the job's node count (-N), so every TP (and CP, EP) group can sit in one block
(NVL72 rack). Slurm 23.11-25.11 cannot take it from here (no segment_size in
job_submit/lua): the log line names the --segment to give. No --switches with
topology/block (the block plugin ignores them). With topology/tree it keeps
asking for --switches as above.
--]]

-- Largest size a layout dimension may have (gputopo's parallel layouts cap a job at 2^20 ranks).
local MAX_LAYOUT_SIZE = 1048576

-- The layout's sizes from the --gpu-topo value ("island,tp=8,pp=4,verbose"), or nil (and why, when
-- a size is out of range: never a number that overflows in a log line).
local function layout_of(value)
    local sizes, any = { tp = 1, cp = 1, ep = 1 }, false
    for word in string.gmatch(value, "[^,]+") do
        local k, v = string.match(word, "^(%a+)=(%d+)$")
        if k == "tp" or k == "cp" or k == "ep" or k == "pp" or k == "dp" then
            local n = #v <= 7 and tonumber(v) or nil
            if n == nil or n < 1 or n > MAX_LAYOUT_SIZE then
                return nil, string.format("%s is not from 1 to %d", k, MAX_LAYOUT_SIZE)
            end
            sizes[k] = n
            any = true
        end
    end
    if not any then return nil end
    if sizes.tp * sizes.cp * sizes.ep > MAX_LAYOUT_SIZE then
        return nil, string.format("tp*cp*ep is more than %d GPUs", MAX_LAYOUT_SIZE)
    end
    return sizes
end

-- `s` safe for slurmctld's log: control characters (a newline would start a forged line) as \ddd.
local function printable(s)
    return (string.gsub(s, "[%c\\]", function(c) return string.format("\\%03d", string.byte(c)) end))
end

-- The planning base block (nodes) of topology/block, or nil without BlockName= lines: Slurm's
-- bblock_node_cnt (src/plugins/topology/block/block_record.c, 23.11-26.05): BlockSizes' first
-- value, else the node count of the first block. A --segment larger than it is refused by 24.11
-- ("segment (S) > bblock_node_cnt (B) is not supported") and, on 26.05, spans several blocks.
local function base_block()
    if GPUTOPO_BLOCK_NODES ~= nil and GPUTOPO_BLOCK_NODES > 0 then return GPUTOPO_BLOCK_NODES end
    local blocks = group_sizes("[Bb][Ll][Oo][Cc][Kk][Nn][Aa][Mm][Ee]=")
    if #blocks == 0 then return nil end
    for _, line in ipairs(topology_lines()) do
        local first = string.match(line, "^%s*[Bb][Ll][Oo][Cc][Kk][Ss][Ii][Zz][Ee][Ss]=(%d+)")
        if first then return tonumber(first) end
    end
    return blocks[1]
end

-- --segment for a layout: nil when no size fits (and why). Slurm refuses a job whose node count
-- the segment does not divide, so a job without -N (its count unknown here) gets none.
local function segment_for(job_desc, sizes, block)
    local gpn = job_desc.ntasks_per_node
    if gpn == nil or gpn == 0 or gpn >= NO_VAL16 then gpn = GPUTOPO_GPUS_PER_NODE end
    local unit = math.ceil(sizes.tp * sizes.cp * sizes.ep / gpn)
    if unit > block then
        return nil, string.format("tp*cp*ep = %d GPUs need %d nodes, more than a block's %d",
                                  sizes.tp * sizes.cp * sizes.ep, unit, block)
    end
    local nodes = job_desc.min_nodes
    if nodes == nil or nodes == 0 or nodes >= NO_VAL then
        return nil, "the job gives no node count (-N), which a segment size must divide"
    end
    local best = nil
    for s = unit, block, unit do
        if nodes % s == 0 then best = s end
    end
    if best == nil then
        return nil, string.format("the job's %d nodes are not a multiple of the %d nodes one TP*CP*EP block needs",
                                  nodes, unit)
    end
    return best, nil
end

--[[
NVL72 racks (gputopo issue 32): where the planning base block is GPUTOPO_NVL72_TRAYS nodes (a
GB200/GB300 NVL72 rack of 18 compute trays), a job without a layout gets the segment size NVIDIA's
Slurm guidance for NVL72 gives: 16 nodes for jobs of 128 GPUs or more, 4 for 32-127 GPUs, 1 below
32. Larger segments need whole racks with few failed trays (segments of 9 lose capacity fast as trays
fail); a segment of 16 leaves 2 trays of each rack as spares. Slurm refuses a node count the segment
does not divide: the largest divisor of the job's nodes at most that size. Per release as for a
layout (ask_segment): set on 26.05+, named in the log on 23.11-25.11. 0: off.
--]]
GPUTOPO_NVL72_TRAYS = 18

-- NVIDIA's segment size for a job on NVL72 racks: nil when it does not apply (and why).
local function nvl72_segment(job_desc, block)
    if GPUTOPO_NVL72_TRAYS == nil or GPUTOPO_NVL72_TRAYS <= 0 or block ~= GPUTOPO_NVL72_TRAYS then
        return nil, string.format("no layout (tp=..) and blocks of %d nodes are not NVL72 racks", block)
    end
    local nodes = job_desc.min_nodes
    if nodes == nil or nodes == 0 or nodes >= NO_VAL then
        return nil, "the job gives no node count (-N), which a segment size must divide"
    end
    local gpn = job_desc.ntasks_per_node
    if gpn == nil or gpn == 0 or gpn >= NO_VAL16 then gpn = GPUTOPO_GPUS_PER_NODE end
    local gpus = nodes * gpn
    local want = 1
    if gpus >= 128 then want = 16 elseif gpus >= 32 then want = 4 end
    for s = want, 1, -1 do
        if nodes % s == 0 then return s, nil end
    end
    return nil, "no segment size divides the job's nodes"
end

-- -w (job_desc.req_nodes) with several segments (Slurm's eval_nodes_block.c): 23.11-25.05 refuse
-- it ("requires nodes with segment are not supported"); 25.11+ take it when the list names at least
-- the job's nodes (else "requires less nodes than job size with segment are not supported").
-- Returns why the segment cannot be asked (nil: it can), and a note for the log line.
local function nodelist_rule(job_desc, seg)
    local list = job_desc.req_nodes
    local nodes = job_desc.min_nodes
    if list == nil or list == "" or nodes == nil or nodes == 0 or nodes >= NO_VAL or nodes <= seg then
        return nil, ""  -- no -w, or one segment: no rule
    end
    local named = hostlist_count(list)
    if named < nodes then
        return string.format("-w names %d nodes, fewer than the job's %d: Slurm refuses several segments then",
                             named, nodes), ""
    end
    return nil, " (with -w: Slurm 25.11+; 23.11-25.05 refuse -w with several segments)"
end

-- With topology/block: sets job_desc.segment_size for the layout (or, without one, for NVL72
-- racks: nvl72_segment) where this Slurm's job_submit/lua has the field (26.05+) and the user
-- gave none; logs what it did or why not.
local function ask_segment(job_desc, value, block, uid)
    local prefix = string.format("gputopo: job from uid %d: --gpu-topo=%s", uid, printable(value))
    local sizes, bad = layout_of(value)
    local seg, why
    if sizes == nil then
        if bad ~= nil then
            slurm.log_info("%s: no --segment (%s)", prefix, bad)
            return
        end
        seg, why = nvl72_segment(job_desc, block)
    else
        seg, why = segment_for(job_desc, sizes, block)
    end
    local given = job_desc.segment_size
    local note = ""
    if seg ~= nil then
        local refused
        refused, note = nodelist_rule(job_desc, seg)
        if refused ~= nil then seg, why = nil, refused end
    end
    if seg == nil then
        slurm.log_info("%s: no --segment (%s)", prefix, why)
    elseif given == nil then
        slurm.log_info("%s: this Slurm's job_submit/lua cannot set --segment (26.05+): submit with --segment=%d " ..
                       "(blocks of %d nodes) to keep every %s in one block%s", prefix, seg, block,
                       sizes == nil and "segment" or "TP*CP*EP group", note)
    elseif given ~= 0 and given < NO_VAL16 then
        slurm.log_info("%s: keeps the user's --segment=%d", prefix, given)
    else
        job_desc.segment_size = seg
        slurm.log_info("%s -> --segment=%d (blocks of %d nodes)", prefix, seg, block)
    end
end

-- As few switches as the job can fit in.
local function switches_for(job_desc)
    local nodes = job_desc.min_nodes
    if nodes == nil or nodes == 0 or nodes >= NO_VAL then return 1 end
    local per = GPUTOPO_ISLAND_NODES
    if per == nil or per <= 0 then per = largest_leaf() end
    if per == nil or per <= 0 then return 1 end
    return math.max(1, math.ceil(nodes / per))
end

local function mode_of(value)
    return string.match(value, "^([^,]*)")
end

local function user_set_switches(job_desc)
    local s = job_desc.req_switch
    return s ~= nil and s ~= 0 and s ~= NO_VAL
end

--[[
gputopo-launch requeues a job only when it asked (gputopo issue 19): with
JobRequeue=1 (Slurm's default) every batch job is requeueable, so the job
record cannot tell `sbatch --requeue` from the default. What the user typed
is seen only here (job_desc.requeue is 1 for --requeue, 0 for --no-requeue,
unset otherwise); it is kept in the Comment as "gputopo:requeue=asked".
--]]
local function mark_requeue_asked(job_desc)
    if job_desc.requeue ~= 1 then return end
    local c = job_desc.comment
    if c == nil or c == "" then
        job_desc.comment = "gputopo:requeue=asked"
    elseif not string.find(c, "gputopo:requeue=asked", 1, true) then
        job_desc.comment = c .. " gputopo:requeue=asked"
    end
end

function slurm_job_submit(job_desc, part_list, submit_uid)
    mark_requeue_asked(job_desc)
    topology_cache = { lines = nil, sizes = {} }  -- this submission reads topology.conf afresh, once
    local value = gpu_topo_value(job_desc)
    if value == nil or mode_of(value) ~= "island" then return slurm.SUCCESS end
    local block = base_block()
    if block ~= nil then
        ask_segment(job_desc, value, block, submit_uid)
        return slurm.SUCCESS
    end
    if user_set_switches(job_desc) then return slurm.SUCCESS end
    job_desc.req_switch = switches_for(job_desc)
    job_desc.wait4switch = GPUTOPO_WAIT4SWITCH_SECONDS
    slurm.log_info("gputopo: job from uid %d: --gpu-topo=%s -> --switches=%d@%d",
                   submit_uid, printable(value), job_desc.req_switch, GPUTOPO_WAIT4SWITCH_SECONDS)
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end

return slurm.SUCCESS
