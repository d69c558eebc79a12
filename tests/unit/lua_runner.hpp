// Lua 5.1 (the release Slurm's job_submit/lua links on Debian) for the tests of
// etc/job_submit.lua, loaded with dlopen: no Lua headers needed to build.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/unit/fixtures.hpp"

namespace gputopo_test {

// Lua 5.1 through dlopen (no headers needed): runs `code` and returns the
// string it returns, or "lua: ..." on an error; "" when liblua5.1 is absent.
inline std::string run_lua(const std::string& code) {
    void* h = dlopen("liblua5.1.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) return "";
    using State = void;
    auto newstate = reinterpret_cast<State* (*)()>(dlsym(h, "luaL_newstate"));
    auto openlibs = reinterpret_cast<void (*)(State*)>(dlsym(h, "luaL_openlibs"));
    auto loadstring = reinterpret_cast<int (*)(State*, const char*)>(dlsym(h, "luaL_loadstring"));
    auto pcall = reinterpret_cast<int (*)(State*, int, int, int)>(dlsym(h, "lua_pcall"));
    auto tolstring = reinterpret_cast<const char* (*)(State*, int, size_t*)>(dlsym(h, "lua_tolstring"));
    auto close_state = reinterpret_cast<void (*)(State*)>(dlsym(h, "lua_close"));
    if (!newstate || !openlibs || !loadstring || !pcall || !tolstring || !close_state) return "";
    State* L = newstate();
    openlibs(L);
    std::string out;
    if (loadstring(L, code.c_str()) != 0 || pcall(L, 0, 1, 0) != 0) {
        const char* e = tolstring(L, -1, nullptr);
        out = std::string("lua: ") + (e ? e : "?");
    } else {
        const char* s = tolstring(L, -1, nullptr);
        out = s ? s : "lua: no string returned";
    }
    close_state(L);
    return out;
}

// A fresh directory holding the shipped etc/job_submit.lua and a topology.conf
// with `topology` beside it, as slurmctld has them; "" when it cannot be made.
inline std::string job_submit_dir(const std::string& topology) {
    char dir[] = "/tmp/gputopo-lua-XXXXXX";
    if (!mkdtemp(dir)) return "";
    const std::string d = dir;
    std::ifstream in(source_dir() + "/etc/job_submit.lua");
    std::ofstream out(d + "/job_submit.lua");
    out << in.rdbuf();
    std::ofstream(d + "/topology.conf") << topology;
    return d;
}

}  // namespace gputopo_test
