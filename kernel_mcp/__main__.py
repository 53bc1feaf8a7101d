from kernel_mcp.cli.launch import main

main()
