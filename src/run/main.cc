#include "pdlaunch/run/launch.h"

int main(int argc, char** argv) { return pdlaunch::Main(argc, argv); }
