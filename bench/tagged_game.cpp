// A game's frame loop on the drop-in malloc with memory tags: AI, render and audio each run under
// their tag, a worker pool runs jobs that carry their subsystem's tag (each worker pushes the job's
// tag with poolalloc::TagScope for the length of the job), the render commands come from a Tracked
// frame allocator and the particles from a Tracked Pool<T>, and audio has a budget whose callback
// logs the frame it was passed in. At the end, one table: what each arena holds and what each
// subsystem malloc'd (poolalloc::print_budgets), then the allocator's statistics with a row per
// tag (poolalloc_print_stats). Links libpoolalloc.
//   tagged_game [FRAMES]
#include <stdlib.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "poolalloc/frame_allocator.hpp"
#include "poolalloc/object_pool.hpp"
#include "poolalloc/poolalloc.h"
#include "poolalloc/tags.hpp"
#include "poolalloc/tracking.hpp"

namespace {

// A job and the tag of the subsystem that queued it.
struct Job {
  int tag;
  std::function<void()> work;
};

// Workers take jobs in order; each runs its job under the job's tag, so that what the job
// allocates is charged to the subsystem that queued it, whichever worker runs it.
class JobSystem {
 public:
  explicit JobSystem(unsigned workers) {
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~JobSystem() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }
  void push(int tag, std::function<void()> work) {
    {
      const std::lock_guard lock(mutex_);
      jobs_.push_back({tag, std::move(work)});
      ++pending_;
    }
    ready_.notify_one();
  }
  // Until every job pushed so far has run.
  void wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      {
        const poolalloc::TagScope scope(job.tag);
        job.work();
        job.work = nullptr;  // the job's captures are freed under its tag too
      }
      const std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_, done_;
  std::deque<Job> jobs_;
  unsigned pending_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

struct Particle {
  float x, y, vx, vy;
};

struct RenderCommand {
  std::uint32_t mesh, material;
  float transform[16];
};

// Each subsystem keeps what it allocated across frames, and lets some of it go each frame.
struct AiState {
  std::map<int, std::vector<int>> paths;  // per agent
};
struct AudioState {
  std::vector<std::unique_ptr<std::vector<float>>> voices;
};

int g_frame = 0;
void audio_over_budget(int, std::uint64_t out_bytes, std::uint64_t budget_bytes, void*) {
  // Runs inside the malloc that took audio over: it may allocate (this line does).
  std::cout << "frame " << g_frame << ": audio over its budget (" << out_bytes << " B out of "
            << budget_bytes << " B)\n";
}

}  // namespace

int main(int argc, char** argv) {
  const int frames = argc > 1 ? std::atoi(argv[1]) : 120;
  const int ai = poolalloc_tag_register("AI");
  const int render = poolalloc_tag_register("Render");
  const int audio = poolalloc_tag_register("Audio");
  poolalloc_tag_set_budget(audio, 1 << 20, audio_over_budget, nullptr);

  poolalloc::FrameAllocator frame_arena(256 << 10);
  poolalloc::Tracked render_commands(frame_arena, 192 << 10);
  render_commands.set_name("render commands");
  poolalloc::Pool<Particle> particle_pool(4096);
  poolalloc::Tracked particles(particle_pool, 64 << 10);
  particles.set_name("particles");

  AiState ai_state;
  AudioState audio_state;
  std::vector<Particle*> live_particles;
  JobSystem jobs(4);
  std::mutex ai_mutex;

  for (g_frame = 0; g_frame < frames; ++g_frame) {
    // AI: path finding as jobs on the workers, charged to AI whichever worker runs them.
    for (int agent = 0; agent < 32; ++agent) {
      jobs.push(ai, [&, agent] {
        std::vector<int> path(64 + (agent * 7 + g_frame) % 200, agent);
        const std::lock_guard lock(ai_mutex);
        ai_state.paths[agent] = std::move(path);
      });
    }
    // Audio: voices start on the main thread under its tag; a few end each frame.
    {
      const poolalloc::TagScope scope(audio);
      audio_state.voices.push_back(std::make_unique<std::vector<float>>(4096 + g_frame * 64));
      if (audio_state.voices.size() > 24) audio_state.voices.erase(audio_state.voices.begin());
    }
    // Render: the frame's commands from the frame arena, a scratch list from malloc.
    {
      const poolalloc::TagScope scope(render);
      std::vector<RenderCommand*> visible;
      for (std::uint32_t i = 0; i < 1000; ++i) {
        auto* command = static_cast<RenderCommand*>(
            render_commands.allocate(sizeof(RenderCommand), alignof(RenderCommand)));
        if (command == nullptr) break;  // the frame arena is full: the rest wait a frame
        command->mesh = i;
        visible.push_back(command);
      }
      for (int i = 0; i < 40; ++i) {
        if (Particle* p = particles.spawn(Particle{0, 0, 1, 1})) live_particles.push_back(p);
      }
      while (live_particles.size() > 1500) {
        particles.despawn(live_particles.front());
        live_particles.erase(live_particles.begin());
      }
    }
    jobs.wait();
    render_commands.end_frame();
    frame_arena.reset();
  }

  std::cout << "after " << frames << " frames:\n";
  poolalloc::print_budgets(std::cout);
  std::cout.flush();
  poolalloc_print_stats(STDOUT_FILENO);
  for (Particle* p : live_particles) particles.despawn(p);
}
