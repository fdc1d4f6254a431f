// Boost.URL is used header-only: its sources are compiled here, once.
#include <boost/url/src.hpp>
