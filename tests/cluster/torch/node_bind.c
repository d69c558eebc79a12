/* A test aid for tests/cluster/t_torch_order.sh, preloaded into the training processes of the
 * loopback cluster: a node listens on its own address only, as a real node does. A bind() to
 * the IPv4 wildcard address binds GPUTOPO_TEST_NODE_ADDR (the node's NodeAddr, 127.0.0.N)
 * instead, and one to the IPv6 wildcard fails (EADDRNOTAVAIL: torch's TCPStore then listens
 * on IPv4), so a peer that connects to another node's address is refused, as on a real
 * cluster (without it every 127.0.0.N reaches every listener). Other binds pass through. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
    typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
    static bind_fn real_bind;
    const char *addr = getenv("GPUTOPO_TEST_NODE_ADDR");
    if (!real_bind)
        real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    if (addr && sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in) &&
        ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY)) {
        struct sockaddr_in own;
        memcpy(&own, sa, sizeof(own));
        if (inet_pton(AF_INET, addr, &own.sin_addr) != 1) {
            errno = EINVAL;
            return -1;
        }
        return real_bind(fd, (const struct sockaddr *)&own, sizeof(own));
    }
    if (addr && sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6) &&
        IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr)) {
        errno = EADDRNOTAVAIL;
        return -1;
    }
    return real_bind(fd, sa, len);
}
