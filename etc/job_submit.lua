--[[
gputopo job_submit.lua: `sbatch/salloc --gpu-topo=island[,flags]` asks for the job's
nodes under one leaf switch (the same as `--switches=1@WAIT`), so that tasks of one
island share a switch. Requires TopologyPlugin=topology/tree (or another plugin that
knows switches) and JobSubmitPlugins=lua; put this file beside slurm.conf.

The option reaches job_submit as `_SLURM_SPANK_OPTION_gputopo_gpu_topo=island,...`
in job_desc.spank_job_env. A --switches the user gave is never changed.
--]]

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

local function mode_of(value)
    return string.match(value, "^([^,]*)")
end

local function user_set_switches(job_desc)
    local s = job_desc.req_switch
    return s ~= nil and s ~= 0 and s ~= NO_VAL
end

function slurm_job_submit(job_desc, part_list, submit_uid)
    local value = gpu_topo_value(job_desc)
    if value == nil or mode_of(value) ~= "island" then return slurm.SUCCESS end
    if user_set_switches(job_desc) then return slurm.SUCCESS end
    job_desc.req_switch = 1
    job_desc.wait4switch = GPUTOPO_WAIT4SWITCH_SECONDS
    slurm.log_info("gputopo: job from uid %d: --gpu-topo=%s -> --switches=1@%d",
                   submit_uid, value, GPUTOPO_WAIT4SWITCH_SECONDS)
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end

return slurm.SUCCESS
