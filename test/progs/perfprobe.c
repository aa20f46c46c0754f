/* Exits 0 if this process may sample its own page faults, kernel mode included, with the user
 * registers (what fltrace's handlers read a fault's registers from), 1 if the kernel refuses. */
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER;
	a.sample_regs_user = 1ull << PERF_REG_X86_IP;
	a.exclude_hv = 1;
	a.remove_on_exec = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		perror("perfprobe: perf_event_open");
		return 1;
	}
	close(fd);
	return 0;
}
