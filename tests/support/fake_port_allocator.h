#pragma once

// A test double of the port allocator: hands out `first`, `first+1`, ..., nothing held.

#include <memory>
#include <utility>
#include <vector>

#include "pdlaunch/plan/ports.h"

namespace pdlaunch {

class FakePortAllocator : public PortAllocator {
 public:
  explicit FakePortAllocator(int first) : next_(first) {}
  std::unique_ptr<PortReservation> Reserve(int count) override {
    std::vector<int> ports;
    for (int i = 0; i < count; ++i) ports.push_back(next_++);
    return std::make_unique<Reservation>(std::move(ports));
  }

 private:
  class Reservation : public PortReservation {
   public:
    explicit Reservation(std::vector<int> ports) : ports_(std::move(ports)) {}
    const std::vector<int>& ports() const override { return ports_; }

   private:
    std::vector<int> ports_;
  };
  int next_;
};

}  // namespace pdlaunch
