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
          job is cut into segments that each stay in one block); 24.05+ adds
          topology.yaml with several topologies per cluster.
--]]

-- Nodes per leaf switch; 0: read the largest leaf from topology.conf beside this file.
GPUTOPO_ISLAND_NODES = 0

-- GPUs per node for --gpu-topo=island,<layout> with topology/block when the job
-- gives no --ntasks-per-node (one task per GPU); 4 on GB200 NVL72 trays.
GPUTOPO_GPUS_PER_NODE = 4

-- How long a job may wait for a one-switch placement before Slurm drops the constraint.
GPUTOPO_WAIT4SWITCH_SECONDS = 60

local OPTION = "_SLURM_SPANK_OPTION_gputopo_gpu_topo"
local NO_VAL = 4294967294

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

-- Number of hosts in a Slurm hostlist expression ("n[1-4,7],login1", "r[1-2]n[01-18]").
local function hostlist_count(expr)
    local total, depth, item = 0, 0, ""
    local function count_item(it)
        if it == "" then return 0 end
        local n = 1
        for group in string.gmatch(it, "%[([^%]]*)%]") do
            local c = 0
            for part in string.gmatch(group, "[^,]+") do
                local lo, hi = string.match(part, "^(%d+)-(%d+)$")
                if lo then c = c + (tonumber(hi) - tonumber(lo) + 1) else c = c + 1 end
            end
            n = n * c
        end
        return n
    end
    for ch in string.gmatch(expr .. ",", ".") do
        if ch == "[" then depth = depth + 1 elseif ch == "]" then depth = depth - 1 end
        if ch == "," and depth == 0 then
            total = total + count_item(item)
            item = ""
        else
            item = item .. ch
        end
    end
    return total
end

-- The largest group (nodes) named by lines starting with `key_pattern` (a Lua pattern of the key
-- and its '=') in the topology.conf beside this file, or nil.
local function largest_group(key_pattern)
    local src = debug.getinfo(1, "S").source
    local dir = string.match(src, "^@(.*)/[^/]*$") or "."
    local f = io.open(dir .. "/topology.conf", "r")
    if f == nil then return nil end
    local best = nil
    for line in f:lines() do
        line = string.gsub(line, "#.*", "")
        if string.match(line, "^%s*" .. key_pattern) then
            local nodes = string.match(line, "[Nn][Oo][Dd][Ee][Ss]=(%S+)")
            if nodes then
                local n = hostlist_count(nodes)
                if best == nil or n > best then best = n end
            end
        end
    end
    f:close()
    return best
end

-- The largest leaf switch (nodes) in the topology.conf beside this file, or nil.
local function largest_leaf() return largest_group("[Ss][Ww][Ii][Tt][Cc][Hh][Nn][Aa][Mm][Ee]=") end

--[[
A parallel layout (gputopo issue 22): `--gpu-topo=island,tp=8,pp=4[,cp=..,ep=..]`.
With topology/block (topology.conf beside this file has BlockName= lines, Slurm
23.11+), the job asks for --segment=S: S nodes per segment, each segment inside
one block, S a multiple of the nodes one TP*CP*EP block needs
(ceil(tp*cp*ep / GPUs per node)), as large as a block allows and dividing the
job's node count, so every TP (and CP, EP) group can sit in one block (NVL72
rack). With topology/tree it keeps asking for --switches as above.
--]]

-- The layout's sizes from the --gpu-topo value ("island,tp=8,pp=4,verbose"), or nil.
local function layout_of(value)
    local sizes, any = { tp = 1, cp = 1, ep = 1 }, false
    for word in string.gmatch(value, "[^,]+") do
        local k, v = string.match(word, "^(%a+)=(%d+)$")
        if k == "tp" or k == "cp" or k == "ep" or k == "pp" or k == "dp" then
            sizes[k] = tonumber(v)
            any = true
        end
    end
    if not any then return nil end
    return sizes
end

-- The largest block (nodes) in the topology.conf beside this file, or nil without BlockName= lines.
local function largest_block() return largest_group("[Bb][Ll][Oo][Cc][Kk][Nn][Aa][Mm][Ee]=") end

-- --segment for a layout: nil when no block topology or no size fits (reason logged).
local function segment_for(job_desc, sizes, block)
    local gpn = job_desc.ntasks_per_node
    if gpn == nil or gpn == 0 or gpn >= NO_VAL then gpn = GPUTOPO_GPUS_PER_NODE end
    local unit = math.ceil(sizes.tp * sizes.cp * sizes.ep / gpn)
    if unit > block then
        return nil, string.format("tp*cp*ep = %d GPUs need %d nodes, more than a block's %d",
                                  sizes.tp * sizes.cp * sizes.ep, unit, block)
    end
    local nodes = job_desc.min_nodes
    local known = nodes ~= nil and nodes ~= 0 and nodes < NO_VAL
    local best = nil
    for s = unit, block, unit do
        if not known or nodes % s == 0 then best = s end
    end
    if best == nil then
        return nil, string.format("the job's %d nodes are not a multiple of the %d nodes one TP*CP*EP block needs",
                                  nodes, unit)
    end
    return best, nil
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
    local value = gpu_topo_value(job_desc)
    if value == nil or mode_of(value) ~= "island" then return slurm.SUCCESS end
    local sizes = layout_of(value)
    if sizes ~= nil then
        local block = largest_block()
        if block ~= nil then
            local seg, why = segment_for(job_desc, sizes, block)
            local given = job_desc.segment_size
            if seg ~= nil and (given == nil or given == 0 or given >= NO_VAL) then
                job_desc.segment_size = seg
                slurm.log_info("gputopo: job from uid %d: --gpu-topo=%s -> --segment=%d (blocks of %d nodes)",
                               submit_uid, value, seg, block)
            elseif seg == nil then
                slurm.log_info("gputopo: job from uid %d: --gpu-topo=%s: no --segment (%s)", submit_uid, value, why)
            end
            return slurm.SUCCESS
        end
    end
    if user_set_switches(job_desc) then return slurm.SUCCESS end
    job_desc.req_switch = switches_for(job_desc)
    job_desc.wait4switch = GPUTOPO_WAIT4SWITCH_SECONDS
    slurm.log_info("gputopo: job from uid %d: --gpu-topo=%s -> --switches=%d@%d",
                   submit_uid, value, job_desc.req_switch, GPUTOPO_WAIT4SWITCH_SECONDS)
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end

return slurm.SUCCESS
