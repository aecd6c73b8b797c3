// Header hygiene: tenure.hpp is self-contained (nothing included before it).
#include <tenure/tenure.hpp>
