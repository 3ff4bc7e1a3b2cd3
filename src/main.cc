#include "pdlaunch/launch.h"

int main(int argc, char** argv) { return pdlaunch::Main(argc, argv); }
