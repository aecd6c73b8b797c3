// Must not compile below C++17: tenure.hpp checks the language standard
// before anything else and stops with one #error, not a cascade of template
// errors. Compiled with the `// std:` flag it must fail with exactly that
// error and a short output; compiled as C++17 it must succeed.
// std: -std=c++14
// expect-error: tenure.hpp requires C++17 or later
#include <tenure/tenure.hpp>

int main() { return 0; }
