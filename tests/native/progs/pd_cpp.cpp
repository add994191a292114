// perf.data reader test program: C++ names perf demangles (namespaces, templates, operators,
// lambdas, anonymous namespaces, virtual calls, std::function). usage: pd_cpp SECONDS
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

volatile unsigned long pd_sink;

namespace pd { namespace engine {
template <typename T, int N> struct Box {
    __attribute__((noinline)) T spin(T x) const { for (int i = 0; i < 3000; i++) x = x * 31 + N + i; return x; }
    __attribute__((noinline)) static T fold(const std::vector<T>& v, T (*f)(T)) { T s = 0; for (auto e : v) s += f(e); return s; }
};
__attribute__((noinline)) unsigned long op(unsigned long x) { Box<unsigned long, 3> b; return b.spin(x); }
struct Shape {
    virtual ~Shape() {}
    __attribute__((noinline)) virtual unsigned long operator()(unsigned long x) const { return op(x) + 1; }
    __attribute__((noinline)) bool operator<(const Shape&) const { return pd_sink & 1; }
};
struct Square : Shape {
    __attribute__((noinline)) unsigned long operator()(unsigned long x) const override { return op(x) * 2; }
};
}}

namespace {
__attribute__((noinline)) unsigned long hidden(std::map<std::string, int>& m, unsigned long x)
{
    m["k" + std::to_string(x % 7)] += 1;
    return pd::engine::op(x);
}
}

static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

int main(int argc, char** argv)
{
    double end = now() + (argc > 1 ? std::stod(argv[1]) : 1.0);
    std::vector<unsigned long> v(4, 7);
    std::map<std::string, int> m;
    pd::engine::Square sq;
    const pd::engine::Shape& s = sq;
    std::function<unsigned long(unsigned long)> fn = [&m](unsigned long x) { return hidden(m, x); };
    auto lambda = [](unsigned long x) __attribute__((noinline)) { return pd::engine::Box<long, 9>().spin((long)x); };
    while (now() < end) {
        pd_sink += pd::engine::Box<unsigned long, 5>::fold(v, pd::engine::op);
        pd_sink += s(3) + fn(pd_sink) + (unsigned long)lambda(pd_sink) + (s < sq);
    }
    return 0;
}
