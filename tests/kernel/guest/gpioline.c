// SPDX-License-Identifier: MIT
/*
 * gpioline: what the kernel says about GPIO lines, through the v2 character-device uAPI, as an
 * independent view for covo's kernel suite (busybox has no gpioinfo). Built static.
 *
 *   gpioline info CHIP OFFSET    prints "name=N consumer=C dir=in|out used=0|1 edge=none|rising|falling|both"
 *   gpioline find CHIP NAME      prints the offset of the line called NAME
 *   gpioline label CHIP          prints the chip's label
 *   gpioline get CHIP OFFSET     prints the line's level (0 or 1), requesting it as-is: its
 *                                direction is left alone, so an output reads what it drives
 *   gpioline hold CHIP OFFSET CONSUMER SECONDS
 *                                requests the line as an input as CONSUMER and holds it
 */
#include <fcntl.h>
#include <linux/gpio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int open_chip(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	return fd;
}

static int info(int fd, unsigned int off, struct gpio_v2_line_info *li)
{
	memset(li, 0, sizeof(*li));
	li->offset = off;
	return ioctl(fd, GPIO_V2_GET_LINEINFO_IOCTL, li);
}

int main(int argc, char **argv)
{
	struct gpio_v2_line_info li;
	int fd;

	if (argc >= 4 && !strcmp(argv[1], "info")) {
		fd = open_chip(argv[2]);
		if (info(fd, (unsigned int)strtoul(argv[3], NULL, 0), &li) < 0) {
			perror("GPIO_V2_GET_LINEINFO_IOCTL");
			return 2;
		}
		unsigned long long f = li.flags;
		const char *edge = "none";
		if ((f & GPIO_V2_LINE_FLAG_EDGE_RISING) && (f & GPIO_V2_LINE_FLAG_EDGE_FALLING))
			edge = "both";
		else if (f & GPIO_V2_LINE_FLAG_EDGE_RISING)
			edge = "rising";
		else if (f & GPIO_V2_LINE_FLAG_EDGE_FALLING)
			edge = "falling";
		printf("name=%s consumer=%s dir=%s used=%d edge=%s\n", li.name[0] ? li.name : "-",
		       li.consumer[0] ? li.consumer : "-",
		       (f & GPIO_V2_LINE_FLAG_OUTPUT) ? "out" : "in",
		       (f & GPIO_V2_LINE_FLAG_USED) ? 1 : 0, edge);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "label")) {
		struct gpiochip_info ci;
		fd = open_chip(argv[2]);
		if (ioctl(fd, GPIO_GET_CHIPINFO_IOCTL, &ci) < 0) {
			perror("GPIO_GET_CHIPINFO_IOCTL");
			return 2;
		}
		printf("%s\n", ci.label);
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "find")) {
		struct gpiochip_info ci;
		fd = open_chip(argv[2]);
		if (ioctl(fd, GPIO_GET_CHIPINFO_IOCTL, &ci) < 0) {
			perror("GPIO_GET_CHIPINFO_IOCTL");
			return 2;
		}
		for (unsigned int i = 0; i < ci.lines; i++)
			if (info(fd, i, &li) == 0 && !strcmp(li.name, argv[3])) {
				printf("%u\n", i);
				return 0;
			}
		fprintf(stderr, "no line named %s on %s\n", argv[3], argv[2]);
		return 1;
	}
	if (argc >= 4 && !strcmp(argv[1], "get")) {
		struct gpio_v2_line_request req;
		struct gpio_v2_line_values vals = { .mask = 1 };
		fd = open_chip(argv[2]);
		memset(&req, 0, sizeof(req));
		req.offsets[0] = (unsigned int)strtoul(argv[3], NULL, 0);
		req.num_lines = 1;
		snprintf(req.consumer, sizeof(req.consumer), "gpioline");
		if (ioctl(fd, GPIO_V2_GET_LINE_IOCTL, &req) < 0) {
			perror("GPIO_V2_GET_LINE_IOCTL");
			return 2;
		}
		if (ioctl(req.fd, GPIO_V2_LINE_GET_VALUES_IOCTL, &vals) < 0) {
			perror("GPIO_V2_LINE_GET_VALUES_IOCTL");
			return 2;
		}
		printf("%d\n", (int)(vals.bits & 1));
		return 0;
	}
	if (argc >= 6 && !strcmp(argv[1], "hold")) {
		struct gpio_v2_line_request req;
		fd = open_chip(argv[2]);
		memset(&req, 0, sizeof(req));
		req.offsets[0] = (unsigned int)strtoul(argv[3], NULL, 0);
		req.num_lines = 1;
		req.config.flags = GPIO_V2_LINE_FLAG_INPUT;
		snprintf(req.consumer, sizeof(req.consumer), "%s", argv[4]);
		if (ioctl(fd, GPIO_V2_GET_LINE_IOCTL, &req) < 0) {
			perror("GPIO_V2_GET_LINE_IOCTL");
			return 2;
		}
		printf("holding\n");
		fflush(stdout);
		sleep((unsigned int)strtoul(argv[5], NULL, 0));
		return 0;
	}
	fprintf(stderr, "usage: gpioline info|find|hold ...\n");
	return 2;
}
